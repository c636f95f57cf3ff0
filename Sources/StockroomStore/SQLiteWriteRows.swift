import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire

/// SQLite's `WriteRows`: the rules' steps on the writer connection, inside the write's
/// transaction. Every method is synchronous (the writer is the only one, so nothing is held or
/// waited for): `run` drives the rules to their end on the writer's thread.
final class SQLiteWriteRows: WriteRows {
    typealias ItemRow = ItemRecord

    let db: Database
    /// The writer's observer, handed each entry as it is appended.
    private let observer: ChangeObserver
    /// The seq of the entry appended last, for the navigation row saved after it.
    private var lastAppended: Int64?
    /// What this write read or wrote of each client's row: `saveClient` takes the owner's change
    /// seq from it instead of reading the row again, and rewrites the client's item references only
    /// when they changed (most commands keep them: a draft typed, a tab selected).
    private var knownClients: [ClientID: KnownClient] = [:]
    /// Clients this write looked for and found no row of: none of their references is stored.
    private var absentClients: Set<ClientID> = []

    private struct KnownClient {
        var ownerChangeSeq: Int64
        /// The items whose delete would change its stored state, which `client_item_refs` holds
        /// for it (`NavigationState.repairableItemIDs`: each once, in order of first mention).
        var repairableItemIDs: [ItemID]
    }

    private init(_ db: Database, observer: ChangeObserver) {
        self.db = db
        self.observer = observer
    }

    /// Runs `body` (rules over this connection's rows) to its end on the calling thread, the
    /// writer's. Nothing in it suspends, since every step here is synchronous; a body that did
    /// would touch the connection from another thread, so that stops the process. `observer`: the
    /// writer's, to hand each appended entry to (the commit then publishes them without a read).
    static func run<T>(
        _ db: Database, observer: ChangeObserver, _ body: @escaping (SQLiteWriteRows) async throws -> T
    ) throws -> T {
        let run = ImmediateRun(rows: SQLiteWriteRows(db, observer: observer), body: body)
        run.start()
        guard let result = run.result else {
            preconditionFailure("a SQLite write suspended: its rows are read and written on the writer's thread only")
        }
        return try result.get()
    }

    /// Runs `body`, a bulk write, with the writer's page cache at `AppDatabase.bulkWriteCacheKiB`,
    /// and sets it back to `writerCacheKiB` after. An import of 1,000 items dirties about as many
    /// pages of the id index, spread at random: in the writer's usual cache they would spill to the
    /// WAL mid-transaction and many be written twice. The cache shrinks back as the transaction's
    /// pages are released at its end.
    func withBulkCache<T>(_ body: () async throws -> T) async throws -> T {
        try AppDatabase.setWriterCache(db, kiB: AppDatabase.bulkWriteCacheKiB)
        defer { try? AppDatabase.setWriterCache(db, kiB: AppDatabase.writerCacheKiB) }
        return try await body()
    }

    // MARK: Items

    func liveItem(_ id: ItemID) throws -> StoredItem<ItemRecord>? {
        guard let record = try ItemRecord.live(db, id: id) else { return nil }
        return StoredItem(item: try record.item, row: record)
    }

    func itemExists(_ id: ItemID) throws -> Bool {
        // A cached statement, not the query interface (which prepares its statement anew): a batch import runs this once per item.
        try Bool.fetchOne(db.cachedStatement(sql: ItemRecord.existsSQL), arguments: [id.description]) == true
    }

    func insertItem(_ id: ItemID, fields: ValidDraft, at: Int64) throws -> Item? {
        if try itemExists(id) { return nil }
        let record = ItemRecord(id: id, fields: fields, at: at)
        try record.insertCached(db)
        return try record.item
    }

    func updateItem(_ stored: StoredItem<ItemRecord>, fields: ValidDraft, at: Int64) throws -> Item {
        var record = stored.row
        record.apply(fields)
        record.version += 1
        record.updatedAt = max(at, record.updatedAt)
        try record.updateCached(db)
        return try record.item
    }

    func updateLiveItem(_ id: ItemID, fields: ValidDraft, precondition: VersionPrecondition?, at: Int64) throws -> (before: Item, after: Item)? {
        guard let stored = try liveItem(id), precondition?.matches(stored.item.version) ?? true else { return nil }
        return (stored.item, try updateItem(stored, fields: fields, at: at))
    }

    func tombstone(_ stored: StoredItem<ItemRecord>, at: Int64) throws {
        // A cached statement, not the query interface (which prepares its statement anew): a delete command runs it.
        try db.cachedStatement(sql: ItemRecord.tombstoneSQL).execute(arguments: [at, stored.row.seq])
    }

    // MARK: Navigation

    /// Nothing to queue behind: the writer applies one write at a time.
    func queueWrites(of clientID: ClientID) {}

    func client(_ clientID: ClientID, hold: Bool) throws -> StoredClient? {
        guard let record = try ClientRecord.find(db, clientID: clientID) else {
            absentClients.insert(clientID)
            return nil
        }
        let navigation = try record.navigation
        knownClients[clientID] = KnownClient(
            ownerChangeSeq: record.ownerChangeSeq, repairableItemIDs: navigation.state.repairableItemIDs)
        return StoredClient(navigation: navigation, owner: UserID(stored: record.owner))
    }

    func clientsReferencing(_ id: ItemID) throws -> [ClientID] {
        try ClientItemRefRecord
            .filter(ClientItemRefRecord.Columns.itemID == id.description)
            .order(ClientItemRefRecord.Columns.clientID)
            .select(ClientItemRefRecord.Columns.clientID, as: ClientID.self)
            .fetchAll(db)
    }

    func clientCount(owner: UserID) throws -> Int {
        // A cached statement, not the query interface (which prepares its statement anew): a first command of a client runs it.
        try Int.fetchOne(db.cachedStatement(sql: ClientRecord.countByOwnerSQL), arguments: [owner.rawValue]) ?? 0
    }

    /// Nothing moves under the one writer: the row is at the version the write read.
    func saveClient(_ navigation: Navigation, stateJSON: [UInt8], owner: UserID, ownerChanged: Bool) throws {
        guard let seq = lastAppended else { throw DatabaseError(message: "a navigation saved before its change entry") }
        let known = knownClients[navigation.clientID]
        let ownerChangeSeq: Int64
        if ownerChanged {
            ownerChangeSeq = seq
        } else if let known {
            ownerChangeSeq = known.ownerChangeSeq
        } else {
            // A cached statement, not the query interface (which prepares its statement anew).
            ownerChangeSeq =
                try Int64.fetchOne(db.cachedStatement(sql: ClientRecord.ownerChangeSeqSQL), arguments: [navigation.clientID]) ?? seq
        }
        let record = ClientRecord(
            clientID: navigation.clientID,
            owner: owner.rawValue,
            state: String(decoding: stateJSON, as: UTF8.self),
            version: navigation.version,
            updatedAt: navigation.updatedAt.map(Timestamp.milliseconds) ?? 0,
            ownerChangeSeq: ownerChangeSeq
        )
        try record.upsertCached(db)
        ClientRecord.decodedStates.keep(navigation.state, json: record.state, clientID: navigation.clientID)
        let referenced = navigation.state.repairableItemIDs
        if let stored = known?.repairableItemIDs ?? (absentClients.contains(navigation.clientID) ? [] : nil) {
            // The same items in the same order (a draft typed, a tab selected) need no set.
            if stored != referenced {
                let (old, new) = (Set(stored), Set(referenced))
                if old != new {
                    try ClientItemRefRecord.update(db, clientID: navigation.clientID, from: old, to: new)
                }
            }
        } else {
            try ClientItemRefRecord.replace(db, clientID: navigation.clientID, with: referenced)
        }
        absentClients.remove(navigation.clientID)
        knownClients[navigation.clientID] = KnownClient(ownerChangeSeq: ownerChangeSeq, repairableItemIDs: referenced)
    }

    // MARK: The log

    /// The log's head in this write: the entry it appended last, or, when it appended none, as stored.
    /// The writer appends alone, so the last entry appended is the head.
    func logHead() throws -> Int64 {
        try lastAppended ?? ChangeLog.head(db)
    }

    func append(
        entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, value: (some JSONWritable)?, before: Item?, origin: Origin,
        at: Int64, ownerClient: ClientID?
    ) throws {
        lastAppended = try ChangeLog.append(
            db, entity: entity, op: op, id: id, owner: owner, value: value, before: before, origin: origin, at: at, observer: observer)
    }

    // MARK: Idempotency

    /// Claimed already, in this process, before the write queued (`InFlightKeys`).
    func claim(_ key: IdempotencyKey) -> Bool { true }

    func storedResponse(_ key: IdempotencyKey) throws -> (fingerprint: String, response: StoredResponse)? {
        guard let record = try IdempotencyRecord.find(db, key: key) else { return nil }
        return (record.fingerprint, record.stored)
    }

    func recordResponse(_ key: IdempotencyKey, fingerprint: String, response: StoredResponse, at: Int64) throws {
        try IdempotencyRecord(key: key, fingerprint: fingerprint, response: response, at: at).insertCached(db)
    }

    private static let requestSavepoint = CachedSavepoint("request")

    func savepoint<T>(_ body: () async throws -> T) async throws -> T {
        let savepoint = Self.requestSavepoint
        try savepoint.open(db)
        // Rolled back with the rows: what the body read or wrote of clients, and appended, is not so any more.
        let clientsBefore = knownClients
        let absentBefore = absentClients
        let appendedBefore = lastAppended
        let value: T
        do {
            value = try await body()
        } catch {
            try savepoint.abandon(db)
            knownClients = clientsBefore
            absentClients = absentBefore
            lastAppended = appendedBefore
            throw error
        }
        try savepoint.release(db)
        return value
    }
}

/// One run of rules on the writer's thread, started at once (`Task.immediate`): it ends before
/// `start` returns when nothing in it suspends.
private final class ImmediateRun<T>: @unchecked Sendable {
    // @unchecked: used by the one thread that runs the write; the task runs on it, inside `start`.
    private let rows: SQLiteWriteRows
    private let body: (SQLiteWriteRows) async throws -> T
    private(set) var result: Result<T, any Error>?

    init(rows: SQLiteWriteRows, body: @escaping (SQLiteWriteRows) async throws -> T) {
        self.rows = rows
        self.body = body
    }

    func start() {
        #if canImport(Darwin)
            guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
                fatalError("the SQLite store needs Task.immediate (macOS 26 or later)")
            }
        #endif
        Task.immediate { self.finish(await self.outcome()) }
    }

    private func outcome() async -> Result<T, any Error> {
        do {
            return .success(try await body(rows))
        } catch {
            return .failure(error)
        }
    }

    private func finish(_ outcome: Result<T, any Error>) {
        result = outcome
    }
}
