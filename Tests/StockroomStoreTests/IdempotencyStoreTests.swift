import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore


private func itemRequest(user: UserID, key: String, fingerprint: String) -> IdempotentRequest<Item> {
    IdempotentRequest(key: IdempotencyKey(user: user, scope: .items, key: key), fingerprint: fingerprint) { TestReply.render($0) }
}

private extension Replayable {
    var fresh: Value? {
        if case .fresh(let value) = self { return value }
        return nil
    }
}

/// The purge of old records, aged in SQL. Replays, reused keys, stored and unstored failures and
/// the keys' scopes are in StorageContractTests/IdempotencyContractTests, on every backend.
@Suite("Idempotency keys")
struct IdempotencyStoreTests {
    @Test("purge never removes records younger than 24 hours, even when asked for less, and removes older ones")
    func purgeRespectsMinimumRetention() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            _ = try await database.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "fresh", fingerprint: "F"))
            let hour: Int64 = 3_600_000
            let now = Timestamp.milliseconds(Date())
            try await database.writer.write { db in
                for (key, age) in [("h23", 23 * hour), ("h25", 25 * hour), ("h50", 50 * hour)] {
                    try db.execute(
                        sql: """
                            INSERT INTO idempotency_records (user, scope, key, fingerprint, response, created_at)
                            VALUES ('erin', 'items', ?, 'F', X'', ?)
                            """,
                        arguments: [key, now - age])
                }
            }
            func keys() async throws -> [String] {
                try await database.writer.read { db in try String.fetchAll(db, sql: "SELECT key FROM idempotency_records ORDER BY key") }
            }

            #expect(try await database.purgeIdempotencyRecords(olderThan: .seconds(30 * 3600)) == 1)
            #expect(try await keys() == ["fresh", "h23", "h25"])
            #expect(try await database.purgeIdempotencyRecords(olderThan: .zero) == 1)
            #expect(try await keys() == ["fresh", "h23"])
            #expect(try await database.purgeIdempotencyRecords(olderThan: .seconds(1)) == 0)
            #expect(try await keys() == ["fresh", "h23"])
            #expect(try await probe.count("idempotency_records") == 2)

            // A purged key is free again.
            let reused = try await database.createItem(
                id: nil, draft: Sample.mouse, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "h25", fingerprint: "other"))
            #expect(reused.fresh?.name == "Mouse")
        }
    }
}
