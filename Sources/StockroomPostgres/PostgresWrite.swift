import Foundation
import Logging
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

/// One write transaction: its connection, and the change entries it appends, which take their
/// seqs from `log_head` only at the end (`appendLog`), so that writers queue on the head row for
/// the last step alone. Used by one task, inside `PostgresStore.write`.
final class PostgresWrite {
    let connection: PostgresConnection
    let logger: Logger
    let epoch: String
    /// The daemon's name in the notifications it sends (`NotifiedEntries`), so that its own
    /// listener leaves their entries to the daemon's committer.
    let sender: String

    struct Pending: Sendable {
        var entity: ChangeEntity
        var op: ChangeOp
        var id: String
        var owner: UserID?
        var value: String?
        /// An item change's item as it was (`ItemBefore.stored`).
        var previous: String?
        var origin: Origin
        var at: Int64
        /// A client whose `owner_change_seq` becomes this entry's seq (its owner changed it).
        var ownerClient: ClientID?
    }

    private var pending: [Pending] = []
    /// The idempotency keys the transaction's writes claimed (`claim`).
    var claimedKeys: Set<IdempotencyKey> = []
    /// Keys claimed ahead for a batch's keyed writes (`claimAhead`): whether each was taken, until
    /// its write claims it.
    var claimsAhead: [IdempotencyKey: Bool] = [:]
    /// The stored answers read ahead for the keys claimed ahead (nil: none), until each write asks.
    var recordsAhead: [IdempotencyKey: (fingerprint: String, response: StoredResponse)?] = [:]
    /// The entries numbered and inserted, for the store to publish after the commit.
    private(set) var appended: [ChangeEntry] = []
    /// The head after this transaction's entries, once they are numbered.
    private(set) var head: Int64?
    /// The seq of the transaction's first entry, once numbered.
    private(set) var firstSeq: Int64?
    /// How many numbered entries were let go of `appended` (a transaction larger than the hub keeps).
    private(set) var dropped = 0
    /// Item writes run ahead for several writes of a batch in one statement (`updateLiveItems`,
    /// `insertItems`), by the write each was planned for; its `updateLiveItem` or `insertItem`
    /// takes it instead of a statement.
    var answeredAhead: [ObjectIdentifier: AnsweredAhead] = [:]
    /// The write of the batch that runs now (its key in `answeredAhead`).
    var running: ObjectIdentifier?
    /// Client rows read ahead for a batch's commands (`readAhead`), each until this transaction writes it.
    var clientsAhead: [ClientID: StoredClient] = [:]
    /// Live items read and locked ahead for a batch's commands, each until this transaction writes it.
    var itemsAhead: [ItemID: StoredItem<ItemRow>] = [:]
    /// Device rows written by the batch's commands and not sent yet (`saveClient`), sent in one
    /// statement (`flushSaves`) before any statement that may read them.
    var deferredSaves: [DeferredSave] = []
    /// Item updates of rows locked ahead, not sent yet (`updateItem`), sent in one statement
    /// (`flushItemUpdates`) before any other statement.
    var deferredItemUpdates: [DeferredItemUpdate] = []
    /// How many savepoints of a write (`savepoint`) are open: inside one, nothing is deferred.
    var savepointDepth = 0
    /// A savepoint begun whose SAVEPOINT is not sent yet (`openSavepoint`).
    var savepointPending = false
    /// Stored answers not inserted yet (`recordResponse`, `flushRecords`).
    var pendingRecords: [PendingRecord] = []

    /// A decided request's answer to store with its key.
    struct PendingRecord {
        var key: IdempotencyKey
        var fingerprint: String
        var response: StoredResponse
        var at: Int64
    }

    init(connection: PostgresConnection, logger: Logger, epoch: String, sender: String) {
        self.connection = connection
        self.logger = logger
        self.epoch = epoch
        self.sender = sender
    }

    /// Runs a statement and reads all its rows.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await flushSaves()
        try await openSavepoint()
        return try await connection.query(query, logger: logger).collect()
    }

    /// Records a change entry to append when the transaction ends. `before`: an item change's
    /// item as it was (nil for a create and for other entities).
    func record(
        entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, value: (some JSONWritable)?, before: Item? = nil, origin: Origin,
        at: Int64, ownerClient: ClientID? = nil
    ) {
        let json = value.map { String(decoding: $0.jsonBytes, as: UTF8.self) }
        let previous = before.map { String(decoding: $0.jsonBytes, as: UTF8.self) }
        pending.append(
            Pending(
                entity: entity, op: op, id: id, owner: owner, value: json, previous: previous, origin: origin, at: at, ownerClient: ownerClient))
    }

    /// Forgets what a rolled-back savepoint appended and claimed.
    func discard(from mark: Mark) {
        // Entries numbered early (`appendEarly`) may have been let go already.
        pending.removeSubrange(min(mark.pending, pending.count)...)
        pendingRecords.removeSubrange(min(mark.records, pendingRecords.count)...)
        let kept = mark.appended - dropped
        if kept >= 0 {
            appended.removeSubrange(min(kept, appended.count)...)
        } else {
            appended.removeAll()
            dropped = mark.appended
        }
        head = mark.head
        firstSeq = mark.firstSeq
        claimedKeys = mark.claimedKeys
    }

    /// Where a savepoint starts, for `discard`.
    struct Mark {
        var pending: Int
        /// Numbered entries, those let go included.
        var appended: Int
        var head: Int64?
        var firstSeq: Int64?
        var claimedKeys: Set<IdempotencyKey>
        /// Stored answers kept, not inserted yet.
        var records: Int
    }

    /// How many entries the transaction has appended so far, numbered or not.
    var entryCount: Int { dropped + appended.count + pending.count }

    /// Where a savepoint starts, for `discard`.
    var mark: Mark {
        Mark(
            pending: pending.count, appended: dropped + appended.count, head: head, firstSeq: firstSeq, claimedKeys: claimedKeys,
            records: pendingRecords.count)
    }

    /// Entries pending beyond this are numbered and inserted at once (`appendEarly`).
    static let earlyAppend = 4096

    /// A transaction with many entries (an import) numbers and inserts them as it goes, keeping
    /// only the hub's worth of the newest for publishing: memory does not grow with it. Its first
    /// head step then holds the head row to the end of the transaction.
    func appendEarly() async throws {
        guard pending.count >= Self.earlyAppend else { return }
        try await appendLog()
        let excess = appended.count - ChangeHub.recentCapacity
        if excess > 0 {
            appended.removeFirst(excess)
            dropped += excess
        }
    }

    /// Numbers the pending entries and inserts them, in one statement (`AppendLog`): it takes the
    /// next numbers from `log_head` (waiting while another transaction holds the row; that one
    /// commits, or rolls back and gives its numbers back), inserts the entries, moves their
    /// owners' `owner_change_seq`, and queues the notifications of the new head for every daemon
    /// (`NotifiedEntries`: the entries themselves when they fit, then the head), delivered only if
    /// and when this transaction commits. The head row stays locked from here to the commit, so
    /// this is the transaction's last statement. Returns the head after the entries (the current
    /// head when there are none).
    @discardableResult
    func appendLog() async throws -> Int64 {
        try await flushSaves()
        guard !pending.isEmpty else {
            if let head { return head }
            let rows = try await query("SELECT seq FROM log_head WHERE id = 1")
            guard let seq = try rows.first?.decode(Int64.self) else { throw PostgresStoreError.schema("the database has no log_head row") }
            return seq
        }
        try await openSavepoint()
        let heads =
            pending.contains(where: { $0.ownerClient != nil })
            ? try await connection.rows(AppendLog<AppendLogMovingOwners>(pending, sender: sender), logger: logger)
            : try await connection.rows(AppendLog<AppendLogOnly>(pending, sender: sender), logger: logger)
        guard let last = heads.last else { throw PostgresStoreError.schema("the database has no log_head row") }
        var seq = last - Int64(pending.count)
        for entry in pending {
            seq += 1
            appended.append(
                ChangeEntry(
                    seq: seq, entity: entry.entity, op: entry.op, id: entry.id, owner: entry.owner, valueJSON: entry.value,
                    before: ItemBefore(stored: entry.previous), originClientID: entry.origin.clientID, originIdempotencyKey: entry.origin.idempotencyKey, at: entry.at, epoch: epoch))
        }
        if firstSeq == nil { firstSeq = last - Int64(pending.count) + 1 }
        pending.removeAll()
        head = last
        return last
    }

    /// The head step: entries as parallel arrays, numbered in order after the head. `Variant`:
    /// whether the statement also moves the entries' owner clients' `owner_change_seq`
    /// (`AppendLogMovingOwners`, a navigation command's entries) or not (`AppendLogOnly`: item
    /// writes, whose entries have none): PostgreSQL readies every part of a statement each time it
    /// runs it, the update of `clients` and its indexes included, whether it changes a row or not.
    /// `$11`: what follows `H <head>` in the notification that carries the entries (the sender and
    /// the entries, `NotifiedEntries`), or empty for none; PostgreSQL measures it in its own
    /// encoding, and sends none that would not fit.
    struct AppendLog<Variant: AppendLogVariant>: PostgresPreparedStatement {
        static var name: String { Variant.name }
        static var sql: String { Variant.sql }

        /// The statement, with `owners`: the part that moves the owner clients' `owner_change_seq`, or none.
        static func sql(owners: String) -> String {
            """
            WITH head AS (
                UPDATE log_head SET seq = seq + cardinality($1::text[]) WHERE id = 1 RETURNING seq
            ), entries AS (
                SELECT head.seq - cardinality($1::text[]) + e.n AS seq, e.*
                FROM head, unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[],
                                  $10::text[])
                    WITH ORDINALITY AS e(entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at, owner_client, previous, n)
            ), inserted AS (
                INSERT INTO changes (seq, entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at, previous)
                SELECT seq, entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at, previous FROM entries
            )\(owners)
            SELECT seq,
                (CASE WHEN octet_length($11::text) BETWEEN 1 AND 7950 THEN pg_notify('stockroom', 'H ' || seq || $11::text) END)::text,
                pg_notify('stockroom', 'h ' || seq)::text
            FROM head
            """
        }
        typealias Row = Int64

        var entries: [Pending]
        var sender: String

        init(_ entries: [Pending], sender: String) {
            self.entries = entries
            self.sender = sender
        }

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 11)
            bindings.append(entries.map(\.entity.rawValue))
            bindings.append(entries.map(\.op.rawValue))
            bindings.append(entries.map(\.id))
            bindings.append(NullableTextArray(entries.map { $0.owner?.rawValue }))
            bindings.append(NullableTextArray(entries.map(\.value)))
            bindings.append(NullableTextArray(entries.map { $0.origin.clientID?.rawValue }))
            bindings.append(NullableTextArray(entries.map { $0.origin.idempotencyKey }))
            bindings.append(entries.map(\.at))
            bindings.append(NullableTextArray(entries.map { $0.ownerClient?.rawValue }))
            bindings.append(NullableTextArray(entries.map(\.previous)))
            bindings.append(NotifiedEntries.encode(entries).map { " \(sender)\n" + $0 } ?? "")
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 {
            try row.makeRandomAccess()[0].decode(Int64.self)
        }
    }
}

extension PostgresRowSequence {
    /// Every row.
    func collect() async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in self { rows.append(row) }
        return rows
    }
}

/// Which `PostgresWrite.AppendLog` statement a transaction's entries take.
protocol AppendLogVariant {
    static var name: String { get }
    static var sql: String { get }
}

/// `AppendLog` for entries of which some move their owner client's `owner_change_seq`.
enum AppendLogMovingOwners: AppendLogVariant {
    static let name = "stockroom_append_log"
    static let sql = PostgresWrite.AppendLog<Self>.sql(
        owners: """
            , owners AS (
                UPDATE clients c SET owner_change_seq = o.seq
                FROM (SELECT owner_client, max(seq) AS seq FROM entries WHERE owner_client IS NOT NULL GROUP BY owner_client) o
                WHERE c.client_id = o.owner_client
            )
            """)
}

/// `AppendLog` for entries none of which has an owner client (item writes).
enum AppendLogOnly: AppendLogVariant {
    static let name = "stockroom_append_log_only"
    static let sql = PostgresWrite.AppendLog<Self>.sql(owners: "")
}
