import Foundation
import GRDB
import StockroomCore
import StockroomWire
import Synchronization
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

/// Remembers every response a render closure handed to the store.
private final class Rendered: Sendable {
    private let responses = Mutex<[StoredResponse?]>([])
    var all: [StoredResponse?] { responses.withLock { $0 } }

    func request(user: UserID, key: String, fingerprint: String) -> IdempotentRequest<Item> {
        IdempotentRequest(key: IdempotencyKey(user: user, scope: .items, key: key), fingerprint: fingerprint) { result in
            let response = render(result)
            self.responses.withLock { $0.append(response) }
            return response
        }
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

    var replayed: StoredResponse? {
        if case .replayed(let response) = self { return response }
        return nil
    }
}

@Suite("Idempotency keys")
struct IdempotencyStoreTests {
    @Test("a retry with the same key replays the stored response and writes nothing")
    func retryReplays() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let rendered = Rendered()
            let request = rendered.request(user: "erin", key: "k1", fingerprint: "POST /v1/items {keyboard}")
            let origin = Origin(user: "erin", clientID: nil, idempotencyKey: "k1")

            let first = try await database.createItem(id: nil, draft: Sample.keyboard, origin: origin, idempotency: request)
            let item = try #require(first.fresh)
            try #require(rendered.all.count == 1)
            let stored = try #require(rendered.all[0])
            #expect(try TestReply(stored).status == 201)
            #expect(try JSONCoding.decoder().decode(Item.self, from: TestReply(stored).body) == item)
            #expect(try await database.item(item.id) == item)
            #expect(try await probe.changes() == [.itemUpsert(1, item, origin)])
            let before = try await probe.snapshot()

            let second = try await database.createItem(id: nil, draft: Sample.keyboard, origin: origin, idempotency: request)
            #expect(second.replayed == stored)
            #expect(rendered.all.count == 1, "a replay renders nothing new")
            #expect(try await probe.snapshot() == before)
            #expect(try await probe.count("items") == 1)
        }
    }

    @Test("the same key with a different fingerprint is idempotencyKeyReused and writes nothing")
    func sameKeyDifferentRequest() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            _ = try await database.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "k1", fingerprint: "A"))
            let before = try await probe.snapshot()

            #expect(
                await failure {
                    try await database.createItem(
                        id: nil, draft: Sample.mouse, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "k1", fingerprint: "B"))
                } == .idempotencyKeyReused)
            #expect(try await probe.snapshot() == before)
        }
    }

    @Test("a failed outcome that render stores is replayed too, and its write is not applied")
    func storedFailureReplays() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let existing = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let before = try await probe.snapshot()
            let request = itemRequest(user: "erin", key: "bad", fingerprint: "POST /v1/items {blank}")

            #expect(
                await failure { try await database.createItem(id: nil, draft: Sample.blankName, origin: Sample.erin, idempotency: request) }
                    == .domain(Sample.blankNameError))
            let after = try await probe.snapshot()
            #expect(after.items == before.items)
            #expect(after.changes == before.changes)
            #expect(after.sequence == before.sequence)
            #expect(after.idempotency.count == 1)

            let replay = try await database.createItem(id: nil, draft: Sample.blankName, origin: Sample.erin, idempotency: request)
            #expect(replay.replayed == TestReply(status: 422, headers: [:], body: Data("validationFailed".utf8)).stored)

            // A conflict decided inside the transaction is stored the same way.
            let reuse = itemRequest(user: "erin", key: "dup", fingerprint: "POST /v1/items {id: existing}")
            #expect(
                await failure { try await database.createItem(id: existing.id, draft: Sample.mouse, origin: Sample.erin, idempotency: reuse) }
                    == .alreadyExists(existing.id))
            let replayed = try await database.createItem(id: existing.id, draft: Sample.mouse, origin: Sample.erin, idempotency: reuse)
            #expect(replayed.replayed == TestReply(status: 409, headers: [:], body: Data("alreadyExists".utf8)).stored)
            #expect(try await probe.snapshot().changes == before.changes)
        }
    }

    @Test("an outcome render declines to store is not recorded, so a retry runs again")
    func unstoredFailureRunsAgain() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let request = IdempotentRequest<Item>(
                key: IdempotencyKey(user: "erin", scope: .items, key: "put-1"), fingerprint: "PUT keyboard"
            ) { result in
                if case .failure(StoreError.preconditionFailed) = result { return nil }
                return render(result)
            }
            #expect(
                await failure {
                    try await database.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([5]), origin: Sample.erin, idempotency: request)
                } == .preconditionFailed(currentVersion: 1))
            #expect(try await probe.count("idempotency_records") == 0)

            let retried = try await database.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([1]), origin: Sample.erin, idempotency: request)
            #expect(retried.fresh?.version == 2)
            #expect(try await probe.count("idempotency_records") == 1)
        }
    }

    @Test("keys are scoped per user: the same key of another user is a new request")
    func keysAreScopedPerUser() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let erins = try await database.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "same", fingerprint: "F"))
            let ottos = try await database.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.otto, idempotency: itemRequest(user: "otto", key: "same", fingerprint: "F"))
            let erin = try #require(erins.fresh)
            let otto = try #require(ottos.fresh)
            #expect(erin.id != otto.id)
            #expect(try await probe.count("items") == 2)
            #expect(try await probe.count("idempotency_records") == 2)
        }
    }

    @Test("commands: a retried command replays and applies nothing again; keys are scoped per client")
    func commandReplay() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            func request(_ clientID: ClientID) -> IdempotentRequest<CommandOutcome> {
                IdempotentRequest(key: IdempotencyKey(user: "erin", scope: .client(clientID), key: "cmd-1"), fingerprint: "push") { result in
                    guard case .success(let outcome) = result else { return nil }
                    return TestReply(status: 200, headers: ["ETag": "\"\(outcome.navigation.version)\""], body: Data("\(outcome.seq)".utf8)).stored
                }
            }
            let origin = Sample.erin("phone", key: "cmd-1")
            let first = try await database.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: origin, idempotency: request("phone"))
            let outcome = try #require(first.fresh)
            #expect(outcome.navigation.version == 1)
            let before = try await probe.snapshot()

            let again = try await database.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: origin, idempotency: request("phone"))
            #expect(again.replayed == TestReply(status: 200, headers: ["ETag": "\"1\""], body: Data("2".utf8)).stored)
            #expect(try await probe.snapshot() == before)
            #expect(try await database.navigation(clientID: "phone", user: "erin") == outcome.navigation)

            let laptop = try await database.runCommand(
                .push(route: .item(id: item.id)), clientID: "laptop", origin: Sample.erin("laptop", key: "cmd-1"), idempotency: request("laptop"))
            #expect(laptop.fresh?.navigation.version == 1)
        }
    }

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
