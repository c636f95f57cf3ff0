import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// What every `Storage` must do, stated against the protocol alone (no SQL, no GRDB): the SQLite
/// store passes it, and a second backend has to. Each test runs once per backend of
/// `StorageBackend.all`, on a fresh store.
@Suite("Storage contract")
struct StorageContractTests {
    static let erin = Origin(user: "erin", clientID: "erins-phone")
    static let keyboard = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 3))
    static let mouse = Draft(
        name: "Mouse", color: Color(name: "Graphite", red: 0.2, green: 0.2, blue: 0.25), status: .outOfStock(isOnBackOrder: true))
    static let everything = FeedFilter(user: "erin", topics: [.item, .navigation])

    // MARK: Items with versions

    @Test(arguments: StorageBackend.all)
    func itemsAreCreatedReadReplacedAndDeletedWithVersions(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let created = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            #expect(created.version == 1 && created.name == "Keyboard" && created.status == .inStock(quantity: 3))
            #expect(try await storage.item(created.id) == created)

            let replaced = try await storage.updateItem(
                created.id, draft: Self.mouse, precondition: .oneOf([1]), origin: Self.erin, idempotency: nil
            ).value
            #expect(replaced.version == 2 && replaced.name == "Mouse" && replaced.color == Self.mouse.color)
            #expect(replaced.createdAt == created.createdAt)
            #expect(try await storage.item(created.id) == replaced)

            // A stale precondition changes nothing and names the current version.
            #expect(await failure {
                try await storage.updateItem(created.id, draft: Self.keyboard, precondition: .oneOf([1]), origin: Self.erin, idempotency: nil)
            } == .preconditionFailed(currentVersion: 2))
            #expect(try await storage.item(created.id) == replaced)

            _ = try await storage.deleteItem(created.id, precondition: .any, origin: Self.erin, idempotency: nil).value
            #expect(try await storage.item(created.id) == nil)
            // An id that existed cannot be created again.
            #expect(await failure {
                try await storage.createItem(id: created.id, draft: Self.keyboard, origin: Self.erin, idempotency: nil)
            } == .alreadyExists(created.id))
        }
    }

    /// A replacement's refusals, in the contract's order (a missing item, then a failed
    /// precondition, then an invalid draft), each changing nothing; a precondition of several
    /// versions holds when any of them is current; the change entry carries the item as written.
    @Test(arguments: StorageBackend.all)
    func aReplacementIsRefusedInTheContractsOrderAndLogsTheItemItWrote(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let invalid = Draft(name: "   ", color: nil, status: .inStock(quantity: 1))
            let missing = ItemID.random()
            for precondition: VersionPrecondition? in [nil, .any, .oneOf([1])] {
                #expect(await failure {
                    try await storage.updateItem(missing, draft: invalid, precondition: precondition, origin: Self.erin, idempotency: nil)
                } == .notFound)
            }
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            let head = try await storage.resolve(.now)
            #expect(await failure {
                try await storage.updateItem(item.id, draft: invalid, precondition: .oneOf([7]), origin: Self.erin, idempotency: nil)
            } == .preconditionFailed(currentVersion: 1))
            #expect(await failure {
                try await storage.updateItem(item.id, draft: Self.mouse, precondition: .oneOf([]), origin: Self.erin, idempotency: nil)
            } == .preconditionFailed(currentVersion: 1))
            guard case .domain(.validationFailed(let field, _)) = await failure({
                try await storage.updateItem(item.id, draft: invalid, precondition: .oneOf([1]), origin: Self.erin, idempotency: nil)
            }) else {
                Issue.record("an invalid draft was not refused as invalid")
                return
            }
            #expect(field == "name")
            #expect(try await storage.item(item.id) == item)
            #expect(try await storage.resolve(.now) == head, "a refusal logs nothing")

            let replaced = try await storage.updateItem(item.id, draft: Self.mouse, precondition: .oneOf([4, 1]), origin: Self.erin, idempotency: nil)
                .value
            #expect(replaced.version == 2 && replaced.name == "Mouse" && replaced.updatedAt >= item.updatedAt)
            let logged = try await storage.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 10).changes
            #expect(logged.count == 1)
            #expect(logged.first.map { try? JSONCoding.decoder().decode(Item.self, from: Data(($0.valueJSON ?? "").utf8)) } == replaced)

            _ = try await storage.deleteItem(item.id, precondition: .any, origin: Self.erin, idempotency: nil)
            #expect(await failure {
                try await storage.updateItem(item.id, draft: Self.keyboard, precondition: .any, origin: Self.erin, idempotency: nil)
            } == .notFound)
        }
    }

    /// Creates of one id at the same moment: exactly one is created (one change entry), every other
    /// is refused as existing.
    @Test(arguments: StorageBackend.all)
    func ofConcurrentCreatesOfOneIDExactlyOneWins(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let id = ItemID.random()
            let head = try await storage.resolve(.now)
            let results = await withTaskGroup(of: Result<Item, StoreError>.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        let draft = Draft(name: "Racer \(index)", color: nil, status: .inStock(quantity: index))
                        do {
                            return .success(try await storage.createItem(id: id, draft: draft, origin: Self.erin, idempotency: nil).value)
                        } catch let error as StoreError {
                            return .failure(error)
                        } catch {
                            return .failure(.unavailable("\(error)"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let created = results.compactMap { try? $0.get() }
            #expect(created.count == 1)
            for case .failure(let error) in results { #expect(Failure(error) == .alreadyExists(id)) }
            #expect(try await storage.item(id) == created.first)
            #expect(try await storage.resolve(.now) == head + 1)
        }
    }

    @Test(arguments: StorageBackend.all)
    func itemsArePagedInCreationOrderAndFiltered(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            var ids: [ItemID] = []
            for index in 0..<5 {
                let draft = Draft(name: "Item \(index)", color: nil, status: index.isMultiple(of: 2) ? .inStock(quantity: index + 1) : .outOfStock(isOnBackOrder: false))
                ids.append(try await storage.createItem(id: nil, draft: draft, origin: Self.erin, idempotency: nil).value.id)
            }
            let first = try await storage.listItems(after: nil, limit: 2, query: nil, status: nil)
            #expect(first.items.map(\.id) == Array(ids[0..<2]))
            let next = try #require(first.next)
            let second = try await storage.listItems(after: next, limit: 10, query: nil, status: nil)
            #expect(second.items.map(\.id) == Array(ids[2...]))
            #expect(second.next == nil)
            #expect(try await storage.listItems(after: nil, limit: 10, query: "item 3", status: nil).items.map(\.id) == [ids[3]])
            #expect(try await storage.listItems(after: nil, limit: 10, query: nil, status: .outOfStock).items.map(\.id) == [ids[1], ids[3]])
        }
    }

    @Test(arguments: StorageBackend.all)
    func aBatchCreatesEachItemOrRefusesItAlone(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let existing = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            let outcomes = try await storage.createItems(
                [BatchItem(id: nil, draft: Self.mouse), BatchItem(id: existing.id, draft: Self.mouse), BatchItem(id: nil, draft: Self.keyboard)],
                origin: Self.erin, idempotency: nil
            ).value
            #expect(outcomes.count == 3)
            guard case .created(let mouse) = outcomes[0], case .refused(.alreadyExists(existing.id)) = outcomes[1],
                case .created(let keyboard) = outcomes[2]
            else {
                Issue.record("unexpected outcomes \(outcomes)")
                return
            }
            #expect(try await storage.item(mouse.id) == mouse)
            #expect(try await storage.item(keyboard.id) == keyboard)
            #expect(try await storage.item(existing.id) == existing)
        }
    }

    // MARK: The change log and the feed

    /// Every write appends its entries in commit order, with gapless seqs, the entity's JSON as
    /// value, the origin, and cursors of the store's epoch; the encoded page is the same changes.
    @Test(arguments: StorageBackend.all)
    func everyWriteAppendsItsChangesInCommitOrder(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "erins-phone", origin: Self.erin, idempotency: nil)
            _ = try await storage.deleteItem(item.id, precondition: nil, origin: Self.erin, idempotency: nil)

            let page = try await storage.readChanges(after: 0, filter: Self.everything, limit: 100)
            #expect(page.changes.map(\.seq) == [1, 2, 3])
            #expect(page.changes.map(\.entity) == [.item, .navigation, .item])
            #expect(page.changes.map(\.op) == [.upsert, .upsert, .delete])
            #expect(page.changes.map(\.id) == [item.id.description, "erins-phone", item.id.description])
            #expect(page.changes.allSatisfy { $0.originClientID == "erins-phone" })
            #expect(page.changes[0].valueJSON.map { Array($0.utf8) } == item.jsonBytes)
            #expect(page.changes[2].valueJSON == nil)
            #expect(page.cursor == FeedCursor(epoch: storage.epoch, seq: 3) && !page.hasMore)

            let encoded = try await storage.readEncodedChanges(after: 0, filter: Self.everything, limit: 100)
            #expect(encoded.changesJSON == Array(page.changes.map(\.json).joined(separator: ",").utf8))
            #expect(encoded.count == 3 && encoded.cursor == page.cursor && !encoded.hasMore)

            let paged = try await storage.readChanges(after: 1, filter: Self.everything, limit: 1)
            #expect(paged.changes.map(\.seq) == [2] && paged.hasMore && paged.cursor.seq == 2)
            // Another user sees the items, not erin's navigation.
            let otto = try await storage.readChanges(after: 0, filter: FeedFilter(user: "otto", topics: [.item, .navigation]), limit: 100)
            #expect(otto.changes.map(\.seq) == [1, 3])
        }
    }

    @Test(arguments: StorageBackend.all)
    func cursorsResolveWithinTheEpochAndTheRetainedLog(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            for index in 0..<5 {
                _ = try await storage.createItem(id: nil, draft: Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: 1)), origin: Self.erin, idempotency: nil)
            }
            #expect(try await storage.resolve(.now) == 5)
            #expect(try await storage.resolve(.beginning) == 0)
            #expect(try await storage.resolve(.oldest) == 0)
            #expect(try await storage.resolve(.after(FeedCursor(epoch: storage.epoch, seq: 2))) == 2)
            #expect(await failure { try await storage.resolve(.after(FeedCursor(epoch: "0123abcd", seq: 2))) } == .resyncRequired)
            #expect(await failure { try await storage.resolve(.after(FeedCursor(epoch: storage.epoch, seq: 6))) } == .resyncRequired)

            #expect(try await storage.trimChanges(maxAge: .seconds(3600), maxEntries: 2) == 3)
            let statistics = try await storage.logStatistics()
            #expect(statistics.entries == 2 && statistics.oldestSeq == 4)
            for start in [FeedStart.beginning, .after(FeedCursor(epoch: storage.epoch, seq: 2))] {
                #expect(await failure { try await storage.resolve(start) } == .resyncRequired, "\(start)")
            }
            #expect(await failure { try await storage.readChanges(after: 1, filter: Self.everything, limit: 10) } == .resyncRequired)
            #expect(try await storage.readChanges(after: 3, filter: Self.everything, limit: 10).changes.map(\.seq) == [4, 5])
            // The oldest entry kept is where a reader that wants all there is starts, without a 410.
            #expect(try await storage.resolve(.oldest) == 3)
        }
    }

    /// A subscriber of the store's hub is woken by a commit it can see, and reads the change.
    @Test(.timeLimit(.minutes(10)), arguments: StorageBackend.all)
    func aCommitWakesTheSubscribersThatSeeIt(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erins = storage.hub.subscribe(FeedFilter(user: "erin", topics: [.navigation]))
            let ottos = storage.hub.subscribe(FeedFilter(user: "otto", topics: [.navigation]))
            defer {
                erins.cancel()
                ottos.cancel()
            }
            let woken = Task { await erins.wait(timeout: .seconds(30)) }
            try await eventually("the wait is parked") { erins.isWaiting }
            _ = try await storage.runCommand(.openAdd, clientID: "erins-phone", origin: Self.erin, idempotency: nil)
            #expect(await woken.value == true)
            #expect(await ottos.wait(timeout: .milliseconds(50)) == false, "otto cannot see erin's navigation")
            let page = try await storage.readChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.navigation]), limit: 10)
            #expect(page.changes.map(\.entity) == [.navigation])
        }
    }

}
