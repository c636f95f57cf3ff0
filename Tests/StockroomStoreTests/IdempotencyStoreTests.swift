import Foundation
import GRDB
import StockroomCore
import StockroomWire
import Testing

import StockroomStorage
@testable import StockroomStore

/// Renders outcomes roughly as the HTTP layer does: decided outcomes are stored, others are not.
/// A stored answer as these tests render one: the store keeps its bytes and never reads them.
struct TestReply {
    let status: Int
    let headers: [String: String]
    let body: Data

    init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Reads back the bytes `stored` wrote.
    init(_ stored: StoredResponse) throws {
        let parts = try JSONDecoder().decode([String].self, from: Data(stored.bytes))
        status = Int(parts[0]) ?? 0
        headers = try JSONDecoder().decode([String: String].self, from: Data(parts[1].utf8))
        body = Data(parts[2].utf8)
    }

    var stored: StoredResponse {
        let headersJSON = String(decoding: try! JSONEncoder().encode(headers), as: UTF8.self)
        return StoredResponse(bytes: Array(try! JSONEncoder().encode(["\(status)", headersJSON, String(decoding: body, as: UTF8.self)])))
    }
}

private func render<Value: Encodable>(_ result: Result<Value, any Error>) -> StoredResponse? {
    switch result {
    case .success(let value):
        let body = (try? JSONCoding.encoder().encode(value)) ?? Data()
        return TestReply(status: 201, headers: ["Content-Type": "application/json"], body: body).stored
    case .failure(StoreError.domain(let error)):
        return TestReply(status: 422, headers: [:], body: Data(error.code.utf8)).stored
    case .failure(StoreError.alreadyExists):
        return TestReply(status: 409, headers: [:], body: Data("alreadyExists".utf8)).stored
    case .failure:
        return nil
    }
}

private func itemRequest(user: UserID, key: String, fingerprint: String) -> IdempotentRequest<Item> {
    IdempotentRequest(key: IdempotencyKey(user: user, scope: .items, key: key), fingerprint: fingerprint) { render($0) }
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
