import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// Watches commits on the writer connection and tells the hub about the change entries they
/// appended and about tokens they revoked or removed (the token generation they moved).
final class ChangeObserver: TransactionObserver, Sendable {
    private struct Touched {
        var tokens = false
        /// The seqs of the entries this transaction inserted, in the order GRDB told them: only
        /// those that stay (events of a savepoint rolled back are never told).
        var inserted: [Int64] = []
        /// Whether the transaction appended to the log (the only change to it observed).
        var changes: Bool { !inserted.isEmpty }
        /// Told of no more changes this transaction (it touched tokens too): `inserted` may lack some.
        var stoppedTelling = false
        /// What `prepareCommit` read inside the transaction, for its commit to publish.
        var prepared: Committed?
        /// `prepareCommit` found no other connection's commit since this one's last known
        /// (`known`), in a transaction that touches neither the log nor tokens.
        var keepsKnown = false
    }

    /// A commit's new entries (empty when it appended none) and the token generation after it.
    private struct Committed {
        var entries: [ChangeEntry]
        var tokenGeneration: Int64
        /// The commit appended more than the hub keeps: `entries` are its last ones only.
        var beyondMemory = false
    }

    /// The token generation after this connection's last commit, and SQLite's data version of the
    /// database file then.
    private struct Known {
        var dataVersion: UInt32
        var tokenGeneration: Int64
    }

    private let hub: ChangeHub
    private let itemCache: ItemCache
    // Only touched on the writer's serial queue; the Mutex makes that checkable by the compiler.
    private let touched = Mutex(Touched())
    private let known = Mutex<Known?>(nil)
    /// Entries as the writes of this transaction appended them (`ChangeLog.append`), by seq: the
    /// last one appended at a seq, since a seq rolled back is appended again; `overflowed` once
    /// more were appended than the hub keeps, and no more are held.
    private let appendedEntries = Mutex<(entries: [Int64: ChangeEntry], overflowed: Bool)>(([:], false))

    init(hub: ChangeHub, itemCache: ItemCache) {
        self.hub = hub
        self.itemCache = itemCache
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if case .insert(let table) = eventKind, table == ChangeRecord.databaseTableName { return true }
        return eventKind.tableName == TokenRecord.databaseTableName
    }

    func databaseDidChange(with event: DatabaseEvent) {
        let both = touched.withLock { touched in
            if event.tableName == TokenRecord.databaseTableName {
                touched.tokens = true
            } else {
                touched.inserted.append(event.rowID)
            }
            guard touched.changes && touched.tokens else { return false }
            touched.stoppedTelling = true
            return true
        }
        if both { stopObservingDatabaseChangesUntilNextTransaction() }
    }

    /// An entry a write of this transaction appended on the writer (`ChangeLog.append`). Past the
    /// hub's capacity (an import) no more are kept: such a commit reads its last entries from the log.
    func appended(
        seq: Int64, entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, valueJSON: String?, previous: String?,
        origin: Origin, at: Int64
    ) {
        let full = appendedEntries.withLock { appended in
            if appended.entries.count > ChangeHub.recentCapacity { appended.overflowed = true }
            return appended.overflowed
        }
        guard !full else { return }
        let entry = ChangeEntry(
            seq: seq, entity: entity, op: op, id: id, owner: owner, valueJSON: valueJSON, before: ItemBefore(stored: previous),
            originClientID: origin.clientID, originIdempotencyKey: origin.idempotencyKey, at: at, epoch: hub.epoch)
        appendedEntries.withLock { $0.entries[seq] = entry }
    }

    /// At the transaction's end, committed or rolled back.
    private func forgetAppended() {
        appendedEntries.withLock {
            $0.entries.removeAll(keepingCapacity: true)
            $0.overflowed = false
        }
    }

    /// The transaction's new entries as appended, without reading the log: when GRDB told of
    /// every insert, each was handed here as appended, and they follow the hub's head without a
    /// gap (no other process appended since this connection's last commit). Nil otherwise: the
    /// log is read.
    private func appendedSinceHead(_ touched: Touched) -> [ChangeEntry]? {
        guard !touched.stoppedTelling, !touched.inserted.isEmpty, touched.inserted.count <= ChangeHub.recentCapacity else { return nil }
        let head = hub.head
        return appendedEntries.withLock { appended -> [ChangeEntry]? in
            guard !appended.overflowed else { return nil }
            var entries: [ChangeEntry] = []
            entries.reserveCapacity(touched.inserted.count)
            for (offset, seq) in touched.inserted.enumerated() {
                guard seq == head + 1 + Int64(offset), let entry = appended.entries[seq] else { return nil }
                entries.append(entry)
            }
            return entries
        }
    }

    /// Reads what the commit will publish while its transaction is still open, just before COMMIT
    /// (the group committer calls it). Read after the commit, each statement would be a read
    /// transaction of its own on the WAL: its locks and its shared-memory reads, on the path of
    /// every write's answer. The write lock is held from BEGIN IMMEDIATE to COMMIT, so no other
    /// process can commit in between: the token generation read here is the one after the commit.
    func prepareCommit(_ db: Database) {
        let touched = touched.withLock { $0 }
        guard touched.changes || touched.tokens else {
            // A commit that neither appends nor touches tokens (a presence tick) leaves the token
            // generation as it was: when no other connection committed since the one known, the
            // next write need not read it (`databaseDidCommit`).
            let keepsKnown = known.withLock { $0 }.map { Self.dataVersion(db) == $0.dataVersion } ?? false
            self.touched.withLock { $0.keepsKnown = keepsKnown }
            return
        }
        // On failure nothing is prepared, and the commit reads as it would have.
        let committed: Committed?
        if touched.changes, let entries = appendedSinceHead(touched) {
            committed = (try? tokenGeneration(db, tokens: touched.tokens)).map { Committed(entries: entries, tokenGeneration: $0) }
        } else {
            committed = try? read(db, changes: touched.changes, tokens: touched.tokens)
        }
        self.touched.withLock { $0.prepared = committed }
    }

    func databaseDidCommit(_ db: Database) {
        let touched = touched.withLock { touched in
            defer { touched = Touched() }
            return touched
        }
        forgetAppended()
        guard touched.changes || touched.tokens else {
            if touched.keepsKnown {
                known.withLock { known in
                    known = known.flatMap { old in Self.dataVersion(db).map { Known(dataVersion: $0, tokenGeneration: old.tokenGeneration) } }
                }
            }
            return
        }
        do {
            // A commit not made by the group committer (or whose prepared read failed) reads now.
            let committed = try touched.prepared ?? read(db, changes: touched.changes, tokens: touched.tokens)
            // Before the hub, and so before any writer of this commit is answered.
            if touched.changes { itemCache.forget(committed.beyondMemory ? nil : committed.entries) }
            known.withLock { known in
                known = Self.dataVersion(db).map { Known(dataVersion: $0, tokenGeneration: committed.tokenGeneration) }
            }
            // Read in the same commit's wake: a token this commit revoked or removed is refused from
            // the next request on, and a revocation committed by any process before these entries is
            // seen before they are delivered (streams re-check their token first). Other processes'
            // revocations without a commit here: `AppDatabase.observeTokenRevocations`.
            hub.observeTokenGeneration(committed.tokenGeneration)
            if touched.changes {
                if committed.beyondMemory { hub.committed(tail: committed.entries) } else { hub.committed(committed.entries) }
            }
        } catch {
            // Subscribers still read the log by cursor; the next commit or heartbeat catches them up.
            // Which items changed is not known: every item is forgotten.
            itemCache.forget(nil)
        }
    }

    /// The one read of each commit's entries that every subscriber shares, and the token generation.
    private func read(_ db: Database, changes: Bool, tokens: Bool) throws -> Committed {
        // A cached statement, not the query interface (which prepares its statement anew): every commit runs it.
        let capacity = ChangeHub.recentCapacity
        var entries = changes
            ? try db.cachedStatement(sql: Self.newEntriesSQL).readRows(binding: { $0.bind(hub.head); $0.bind(capacity + 1) }) { try ChangeRecord(current: $0) }.map { ChangeEntry($0, epoch: hub.epoch) }
            : []
        // A commit larger than the hub keeps (an import): its last entries only; the rest are read from the log.
        let beyondMemory = entries.count > capacity
        if beyondMemory {
            entries = try db.cachedStatement(sql: Self.lastEntriesSQL).readRows(binding: { $0.bind(capacity) }) { try ChangeRecord(current: $0) }
                .reversed().map { ChangeEntry($0, epoch: hub.epoch) }
        }
        return Committed(entries: entries, tokenGeneration: try tokenGeneration(db, tokens: tokens), beyondMemory: beyondMemory)
    }

    /// The token generation as this transaction sees it. Read from the database only when it may have
    /// moved: this transaction touched `tokens`, or some other connection committed since this one's
    /// last commit (SQLite's data version of the file moved): a value that changes only when a token
    /// is revoked is not read on every commit.
    private func tokenGeneration(_ db: Database, tokens: Bool) throws -> Int64 {
        if !tokens, let known = known.withLock({ $0 }), Self.dataVersion(db) == known.dataVersion {
            return known.tokenGeneration
        }
        return try AppDatabase.tokenGeneration(db)
    }

    /// SQLite's data version of the main database file on this connection (`SQLITE_FCNTL_DATA_VERSION`):
    /// it moves with each commit of this connection, and when a transaction begins after another
    /// connection (or process) committed; nil when SQLite does not say.
    static func dataVersion(_ db: Database) -> UInt32? {
        var version: UInt32 = 0
        guard sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else { return nil }
        return version
    }

    private static let newEntriesSQL =
        ChangeRecord.selectSQL + " WHERE \(ChangeRecord.Columns.seq.name) > ? ORDER BY \(ChangeRecord.Columns.seq.name) LIMIT ?"
    private static let lastEntriesSQL = ChangeRecord.selectSQL + " ORDER BY \(ChangeRecord.Columns.seq.name) DESC LIMIT ?"

    func databaseDidRollback(_ db: Database) {
        transactionEndedWithoutCommit()
    }

    /// Forgets what the transaction appended and prepared. GRDB tells `databaseDidRollback` of an
    /// explicit ROLLBACK, but not of a transaction SQLite rolled back by itself when a statement or
    /// the COMMIT failed (a full disk, an I/O error: GRDB takes it for a failed implicit
    /// transaction): the group committer calls this for every transaction of its that did not
    /// commit, so that nothing of it is published with the next commit.
    func transactionEndedWithoutCommit() {
        touched.withLock { $0 = Touched() }
        forgetAppended()
        known.withLock { $0 = nil }
    }
}
