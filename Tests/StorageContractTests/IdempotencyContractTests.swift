import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import Synchronization
import TestSupport
import Testing


/// Remembers every response a render closure handed to the store.
private final class Rendered: Sendable {
    private let responses = Mutex<[StoredResponse?]>([])
    var all: [StoredResponse?] { responses.withLock { $0 } }

    func request(user: UserID, key: String, fingerprint: String) -> IdempotentRequest<Item> {
        IdempotentRequest(key: IdempotencyKey(user: user, scope: .items, key: key), fingerprint: fingerprint) { result in
            let response = TestReply.render(result)
            self.responses.withLock { $0.append(response) }
            return response
        }
    }
}

private func itemRequest(user: UserID, key: String, fingerprint: String) -> IdempotentRequest<Item> {
    IdempotentRequest(key: IdempotencyKey(user: user, scope: .items, key: key), fingerprint: fingerprint) { TestReply.render($0) }
}

/// Idempotency keys on every backend: a decided request is stored with its answer in the write's
/// transaction, and a retry replays it. (Moved from StockroomStoreTests/IdempotencyStoreTests, which
/// keeps the purge test that ages records in SQL.)
@Suite("Storage contract: idempotency keys")
struct IdempotencyContractTests {
    /// A retry with the same key replays the stored response and writes nothing.
    @Test(arguments: StorageBackend.all)
    func retryReplays(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let rendered = Rendered()
            let request = rendered.request(user: "erin", key: "k1", fingerprint: "POST /v1/items {keyboard}")
            let origin = Origin(user: "erin", clientID: nil, idempotencyKey: "k1")

            let first = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: origin, idempotency: request)
            let item = try #require(first.fresh)
            try #require(rendered.all.count == 1)
            let stored = try #require(rendered.all[0])
            #expect(try TestReply(stored).status == 201)
            #expect(try JSONCoding.decoder().decode(Item.self, from: TestReply(stored).body) == item)
            #expect(try await storage.item(item.id) == item)
            #expect(try await loggedChanges(storage) == [.itemUpsert(1, item, origin)])
            let before = try await observe(storage)

            let second = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: origin, idempotency: request)
            #expect(second.replayed == stored)
            #expect(rendered.all.count == 1, "a replay renders nothing new")
            #expect(try await observe(storage) == before)
            #expect(before.items == [item])
        }
    }

    /// An answer stored under a fingerprint an earlier release computed replays for a request whose
    /// legacy fingerprint is that one; any other is still `idempotencyKeyReused`.
    @Test(arguments: StorageBackend.all)
    func anAnswerStoredUnderALegacyFingerprintReplays(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let origin = Origin(user: "erin", clientID: nil, idempotencyKey: "k1")
            let key = IdempotencyKey(user: "erin", scope: .items, key: "k1")
            let first = try await storage.createItem(
                id: nil, draft: Sample.keyboard, origin: origin, idempotency: itemRequest(user: "erin", key: "k1", fingerprint: "old form"))
            let item = try #require(first.fresh)
            let upgraded = IdempotentRequest<Item>(key: key, fingerprint: "2:new form", legacyFingerprint: { "old form" }) { TestReply.render($0) }
            let retry = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: origin, idempotency: upgraded)
            let replayed = try #require(retry.replayed)
            #expect(try JSONCoding.decoder().decode(Item.self, from: TestReply(replayed).body) == item)
            let other = IdempotentRequest<Item>(key: key, fingerprint: "2:new form", legacyFingerprint: { "another form" }) { TestReply.render($0) }
            #expect(
                await failure {
                    try await storage.createItem(id: nil, draft: Sample.keyboard, origin: origin, idempotency: other)
                } == .idempotencyKeyReused)
            #expect(try await loggedChanges(storage) == [.itemUpsert(1, item, origin)])
        }
    }

    /// The same key with a different fingerprint is idempotencyKeyReused and writes nothing.
    @Test(arguments: StorageBackend.all)
    func sameKeyDifferentRequest(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            _ = try await storage.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "k1", fingerprint: "A"))
            let before = try await observe(storage)

            #expect(
                await failure {
                    try await storage.createItem(
                        id: nil, draft: Sample.mouse, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "k1", fingerprint: "B"))
                } == .idempotencyKeyReused)
            #expect(try await observe(storage) == before)
        }
    }

    /// A failed outcome that render stores is replayed too, and its write is not applied.
    @Test(arguments: StorageBackend.all)
    func storedFailureReplays(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let existing = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let before = try await observe(storage)
            let request = itemRequest(user: "erin", key: "bad", fingerprint: "POST /v1/items {blank}")

            #expect(
                await failure { try await storage.createItem(id: nil, draft: Sample.blankName, origin: Sample.erin, idempotency: request) }
                    == .domain(Sample.blankNameError))
            #expect(try await observe(storage) == before)

            let replay = try await storage.createItem(id: nil, draft: Sample.blankName, origin: Sample.erin, idempotency: request)
            #expect(replay.replayed == TestReply(status: 422, headers: [:], body: Data("validationFailed".utf8)).stored)

            // A conflict decided inside the transaction is stored the same way.
            let reuse = itemRequest(user: "erin", key: "dup", fingerprint: "POST /v1/items {id: existing}")
            #expect(
                await failure { try await storage.createItem(id: existing.id, draft: Sample.mouse, origin: Sample.erin, idempotency: reuse) }
                    == .alreadyExists(existing.id))
            let replayed = try await storage.createItem(id: existing.id, draft: Sample.mouse, origin: Sample.erin, idempotency: reuse)
            #expect(replayed.replayed == TestReply(status: 409, headers: [:], body: Data("alreadyExists".utf8)).stored)
            #expect(try await observe(storage) == before)

            // The refusals took no seq: the next write is the next entry.
            let next = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            #expect(try await loggedChanges(storage, after: before.head) == [.itemUpsert(before.head + 1, next, Sample.erin)])
        }
    }

    /// An outcome render declines to store is not recorded, so a retry runs again; its success is
    /// recorded, so the next retry replays.
    @Test(arguments: StorageBackend.all)
    func unstoredFailureRunsAgain(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let request = IdempotentRequest<Item>(
                key: IdempotencyKey(user: "erin", scope: .items, key: "put-1"), fingerprint: "PUT keyboard"
            ) { result in
                if case .failure(StoreError.preconditionFailed) = result { return nil }
                return TestReply.render(result)
            }
            #expect(
                await failure {
                    try await storage.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([5]), origin: Sample.erin, idempotency: request)
                } == .preconditionFailed(currentVersion: 1))

            let retried = try await storage.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([1]), origin: Sample.erin, idempotency: request)
            let updated = try #require(retried.fresh)
            #expect(updated.version == 2)
            let before = try await observe(storage)
            let again = try await storage.updateItem(item.id, draft: Sample.mouse, precondition: .oneOf([1]), origin: Sample.erin, idempotency: request)
            let stored = try #require(again.replayed)
            #expect(try JSONCoding.decoder().decode(Item.self, from: TestReply(stored).body) == updated)
            #expect(try await observe(storage) == before)
        }
    }

    /// Keys are scoped per user: the same key of another user is a new request.
    @Test(arguments: StorageBackend.all)
    func keysAreScopedPerUser(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erins = try await storage.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: itemRequest(user: "erin", key: "same", fingerprint: "F"))
            let ottos = try await storage.createItem(
                id: nil, draft: Sample.keyboard, origin: Sample.otto, idempotency: itemRequest(user: "otto", key: "same", fingerprint: "F"))
            let erin = try #require(erins.fresh)
            let otto = try #require(ottos.fresh)
            #expect(erin.id != otto.id)
            #expect(try await observe(storage).items == [erin, otto])

            // Each user's retry replays that user's own answer.
            for (user, origin, item) in [(UserID(stored: "erin"), Sample.erin, erin), (UserID(stored: "otto"), Sample.otto, otto)] {
                let retry = try await storage.createItem(
                    id: nil, draft: Sample.keyboard, origin: origin, idempotency: itemRequest(user: user, key: "same", fingerprint: "F"))
                let stored = try #require(retry.replayed, "\(user)")
                #expect(try JSONCoding.decoder().decode(Item.self, from: TestReply(stored).body) == item)
            }
            #expect(try await observe(storage).items == [erin, otto])
        }
    }

    /// Commands: a retried command replays and applies nothing again; keys are scoped per device.
    @Test(arguments: StorageBackend.all)
    func commandReplay(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            func request(_ clientID: ClientID) -> IdempotentRequest<CommandOutcome> {
                IdempotentRequest(key: IdempotencyKey(user: "erin", scope: .client(clientID), key: "cmd-1"), fingerprint: "push") { result in
                    guard case .success(let outcome) = result else { return nil }
                    return TestReply(status: 200, headers: ["ETag": "\"\(outcome.navigation.version)\""], body: Data("\(outcome.seq)".utf8)).stored
                }
            }
            let origin = Sample.erin("phone", key: "cmd-1")
            let first = try await storage.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: origin, idempotency: request("phone"))
            let outcome = try #require(first.fresh)
            #expect(outcome.navigation.version == 1)
            let before = try await observe(storage)

            let again = try await storage.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: origin, idempotency: request("phone"))
            #expect(again.replayed == TestReply(status: 200, headers: ["ETag": "\"1\""], body: Data("2".utf8)).stored)
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == outcome.navigation)

            let laptop = try await storage.runCommand(
                .push(route: .item(id: item.id)), clientID: "laptop", origin: Sample.erin("laptop", key: "cmd-1"), idempotency: request("laptop"))
            #expect(laptop.fresh?.navigation.version == 1)
        }
    }
}
