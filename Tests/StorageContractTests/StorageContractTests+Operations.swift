import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

extension StorageContractTests {
    // MARK: Snapshots

    @Test(arguments: StorageBackend.all)
    func aSnapshotIsOneConsistentReadWithItsCursor(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.mouse, origin: Self.erin, idempotency: nil).value
            _ = try await storage.runCommand(.openAdd, clientID: "erins-phone", origin: Self.erin, idempotency: nil)
            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "ottos-phone", origin: Origin(user: "otto"), idempotency: nil)
            let pipe = storage.streamSnapshot(user: "erin", items: nil, depth: 4, stallTimeout: .seconds(30))
            var bytes: [UInt8] = []
            while let chunk = try await pipe.next() { bytes += chunk }
            let snapshot = try JSONCoding.decoder().decode(Snapshot.self, from: Data(bytes))
            #expect(snapshot.items == [item])
            #expect(snapshot.navigation.map(\.clientID) == ["erins-phone"], "only the user's own devices")
            #expect(snapshot.cursor == FeedCursor(epoch: storage.epoch, seq: try await storage.resolve(.now)))
        }
    }

    /// The export's read: a header with the cursor the read is current at, then each live item
    /// (the filter's) in creation order, in one consistent read.
    @Test(arguments: StorageBackend.all)
    func streamedItemsAreOneReadWithItsCursor(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            var items: [Item] = []
            for quantity in [3, 30, 4] {
                items.append(
                    try await storage.createItem(
                        id: nil, draft: Draft(name: "Lamp \(quantity)", color: nil, status: .inStock(quantity: quantity)), origin: Self.erin,
                        idempotency: nil
                    ).value)
            }
            _ = try await storage.deleteItem(items[2].id, precondition: nil, origin: Self.erin, idempotency: nil)
            let encoding = ItemStreamEncoding(
                header: { cursor in Array("\(cursor.encoded)\n".utf8) }, item: { item, json in json.raw(json: "\(item.id)\n".utf8) })
            for (filter, expected) in [(nil, [items[0], items[1]]), (try ItemFilter(parsing: "quantity < 10"), [items[0]])] {
                let pipe = storage.streamItems(matching: filter, encoding: encoding, depth: 2, stallTimeout: .seconds(30))
                var bytes: [UInt8] = []
                while let chunk = try await pipe.next() { bytes += chunk }
                let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
                #expect(lines.first == FeedCursor(epoch: storage.epoch, seq: try await storage.resolve(.now)).encoded)
                #expect(Array(lines.dropFirst()) == expected.map(\.id.description))
            }
        }
    }

    // MARK: Tokens

    @Test(arguments: StorageBackend.all)
    func tokensAuthenticateUntilRevoked(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let token = try await storage.createToken(user: "erin", role: .editor)
            #expect(token.info.user == "erin" && token.info.role == .editor && token.info.revokedAt == nil)
            #expect(try await storage.authenticate(secret: token.secret) == token.info)
            #expect(try await storage.authenticate(secret: token.secret + "x") == nil)
            #expect(try await storage.isLiveToken(id: token.info.id))
            #expect(try await storage.createTokenIfNone(user: "erin", role: .editor) == nil)
            #expect(try await storage.createTokenIfNone(user: "otto", role: .viewer) != nil)
            #expect(try await storage.listTokens().map(\.user) == ["erin", "otto"])

            #expect(try await storage.revokeToken(id: token.info.id))
            #expect(try await storage.authenticate(secret: token.secret) == nil)
            #expect(try await !storage.isLiveToken(id: token.info.id))
            #expect(try await storage.revokeToken(id: TokenID("tok_missing")) == false)
            #expect(try await storage.listTokens().first?.revokedAt != nil)
        }
    }

    // MARK: Operations

    @Test(arguments: StorageBackend.all)
    func aHealthyStoreCanWriteAndSeedsDemoItemsOnce(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            // The probe answers within its own two-second bound; on a machine busy enough (a full
            // test run on two cores) a round can pass it, so a healthy store gets a minute of rounds.
            try await eventually("a probe commits", interval: .milliseconds(100)) { await storage.writeProbe() == nil }
            #expect(try await storage.seedDemoItems())
            #expect(try await storage.seedDemoItems() == false)
            #expect(try await !storage.listItems(after: nil, limit: 10, query: nil, status: nil).items.isEmpty)
            try storage.checkpoint()
        }
    }
}

extension Replayable {
    var isReplay: Bool {
        if case .replayed = self { true } else { false }
    }
}
