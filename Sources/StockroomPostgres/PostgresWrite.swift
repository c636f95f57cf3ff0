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

    private struct Pending {
        var entity: ChangeEntity
        var op: ChangeOp
        var id: String
        var owner: UserID?
        var value: String?
        var origin: Origin
        var at: Int64
        /// A client whose `owner_change_seq` becomes this entry's seq (its owner changed it).
        var ownerClient: ClientID?
    }

    private var pending: [Pending] = []
    /// The entries numbered and inserted, for the store to publish after the commit.
    private(set) var appended: [ChangeEntry] = []
    /// The head after this transaction's entries, once they are numbered.
    private(set) var head: Int64?

    init(connection: PostgresConnection, logger: Logger, epoch: String) {
        self.connection = connection
        self.logger = logger
        self.epoch = epoch
    }

    /// Runs a statement and reads all its rows.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await connection.query(query, logger: logger).collect()
    }

    /// Records a change entry to append when the transaction ends.
    func append(
        entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, value: (some JSONWritable)?, origin: Origin, at: Int64,
        ownerClient: ClientID? = nil
    ) {
        let json = value.map { String(decoding: $0.jsonBytes, as: UTF8.self) }
        pending.append(Pending(entity: entity, op: op, id: id, owner: owner, value: json, origin: origin, at: at, ownerClient: ownerClient))
    }

    /// Forgets what a rolled-back savepoint appended.
    func discard(from mark: (pending: Int, appended: Int, head: Int64?)) {
        pending.removeSubrange(mark.pending...)
        appended.removeSubrange(mark.appended...)
        head = mark.head
    }

    /// Where a savepoint starts, for `discard`.
    var mark: (pending: Int, appended: Int, head: Int64?) { (pending.count, appended.count, head) }

    /// Numbers the pending entries and inserts them: one `UPDATE log_head … RETURNING` takes the
    /// next numbers (waiting while another transaction holds the row; it commits, or rolls back and
    /// gives its numbers back), and queues a notification of the new head for every daemon,
    /// delivered only if and when this transaction commits. Returns the head after them (the
    /// current head when there are none).
    @discardableResult
    func appendLog() async throws -> Int64 {
        guard !pending.isEmpty else {
            if let head { return head }
            let rows = try await query("SELECT seq FROM log_head WHERE id = 1")
            guard let seq = try rows.first?.decode(Int64.self) else { throw PostgresStoreError.schema("the database has no log_head row") }
            return seq
        }
        let count = Int64(pending.count)
        let rows = try await query(
            "UPDATE log_head SET seq = seq + \(count) WHERE id = 1 RETURNING seq, pg_notify('stockroom', 'h ' || seq)::text")
        guard let last = try rows.first?.makeRandomAccess()[0].decode(Int64.self) else {
            throw PostgresStoreError.schema("the database has no log_head row")
        }
        var seq = last - count
        var insert = PostgresQuery(
            unsafeSQL: "INSERT INTO changes (seq, entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at) VALUES ")
        var bindings = PostgresBindings(capacity: pending.count * 9)
        var entries: [ChangeEntry] = []
        for (index, entry) in pending.enumerated() {
            seq += 1
            let base = index * 9
            insert.sql += (index == 0 ? "" : ", ") + "(" + (1...9).map { "$\(base + $0)" }.joined(separator: ", ") + ")"
            bindings.append(seq)
            bindings.append(entry.entity.rawValue)
            bindings.append(entry.op.rawValue)
            bindings.append(entry.id)
            bindings.append(entry.owner?.rawValue)
            bindings.append(entry.value)
            bindings.append(entry.origin.clientID?.rawValue)
            bindings.append(entry.origin.idempotencyKey)
            bindings.append(entry.at)
            entries.append(
                ChangeEntry(
                    seq: seq, entity: entry.entity, op: entry.op, id: entry.id, owner: entry.owner, valueJSON: entry.value,
                    originClientID: entry.origin.clientID, originIdempotencyKey: entry.origin.idempotencyKey, at: entry.at, epoch: epoch))
            if let client = entry.ownerClient {
                try await query("UPDATE clients SET owner_change_seq = \(seq) WHERE client_id = \(client.rawValue)")
            }
        }
        insert.binds = bindings
        try await query(insert)
        pending.removeAll()
        appended += entries
        head = last
        return last
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
