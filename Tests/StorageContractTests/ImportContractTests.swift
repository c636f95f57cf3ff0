import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// A CSV import's rows applied by each backend (`Storage.importItems`): inserts, updates, rows left
/// as they are, rows rejected as they are applied, and what `abort`, `skip` and a dry run leave
/// behind. The file's reading is `ItemImportTests`; the route's, `ImportRouteTests`.
@Suite("Storage contract: CSV import")
struct ImportContractTests {
    static func spool(_ rows: [ItemImportRow]) throws -> ItemImportSpool {
        let spool = try ItemImportSpool()
        for row in rows { try spool.append(row) }
        try spool.finishWriting()
        return spool
    }

    static func row(_ line: Int, _ draft: Draft, id: ItemID? = nil, version: Int? = nil) -> ItemImportRow {
        ItemImportRow(line: line, id: id, version: version, fields: try! ValidDraft(draft))
    }

    /// Items before the import: one to update, one to leave as it is, one to find at another
    /// version, one deleted; and the rows that touch them, with a new item by id and one without.
    struct Scene {
        var changed: Item
        var same: Item
        var stale: Item
        var deleted: ItemID
        var newID = ItemID.random()
        var rows: [ItemImportRow] {
            [
                ImportContractTests.row(2, Sample.bluetooth, id: changed.id, version: 1),
                ImportContractTests.row(3, Sample.mouse, id: same.id),
                ImportContractTests.row(4, Sample.bluetooth, id: stale.id, version: 7),
                ImportContractTests.row(5, Sample.keyboard, id: deleted),
                ImportContractTests.row(6, Sample.keyboard, id: newID),
                ImportContractTests.row(7, Sample.mouse),
                ImportContractTests.row(8, Sample.keyboard, id: ItemID.random(), version: 1),
            ]
        }

        init(_ storage: any Storage) async throws {
            changed = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: nil).value
            same = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin, idempotency: nil).value
            stale = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: nil).value
            deleted = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: nil).value.id
            _ = try await storage.deleteItem(deleted, precondition: nil, origin: Sample.erin, idempotency: nil)
        }
    }

    static func expectRejects(_ result: ItemImportResult) {
        #expect(result.rejected == 3)
        #expect(result.rejects.map(\.line) == [4, 5, 8])
        #expect(result.rejects.map(\.code) == ["preconditionFailed", "alreadyExists", "notFound"])
        #expect(result.rejects.map(\.column) == ["version", "id", "id"])
    }

    @Test(arguments: StorageBackend.all)
    func skipAppliesTheValidRowsOneEntryEach(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let scene = try await Scene(storage)
            let head = try await storage.resolve(.now)
            let origin = Origin(user: "erin", idempotencyKey: "import-1")
            let result = try await storage.importItems(
                try Self.spool(scene.rows), rejectedBefore: 0, options: ItemImportOptions(onError: .skip), origin: origin, idempotency: nil
            ).value
            #expect(result.applied)
            #expect((result.inserted, result.updated, result.unchanged) == (2, 1, 1))
            Self.expectRejects(result)
            #expect(result.head == head + 3)
            let updated = try #require(try await storage.item(scene.changed.id))
            #expect(updated.version == 2 && updated.name == Sample.bluetooth.name)
            #expect(try await storage.item(scene.same.id) == scene.same)
            #expect(try await storage.item(scene.stale.id) == scene.stale)
            #expect(try await storage.item(scene.deleted) == nil)
            #expect(try await storage.item(scene.newID)?.version == 1)
            let page = try await storage.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 3)))
            #expect(page.changes.allSatisfy { $0.originIdempotencyKey == "import-1" })
        }
    }

    @Test(arguments: StorageBackend.all)
    func abortAndADryRunChangeNothingAndSayWhatTheyFound(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let scene = try await Scene(storage)
            let head = try await storage.resolve(.now)
            let dryRun = try await storage.importItems(
                try Self.spool(scene.rows), rejectedBefore: 0, options: ItemImportOptions(dryRun: true, onError: .skip), origin: Sample.erin,
                idempotency: nil
            ).value
            #expect(!dryRun.applied)
            #expect((dryRun.inserted, dryRun.updated, dryRun.unchanged) == (2, 1, 1))
            Self.expectRejects(dryRun)
            let aborted = try await storage.importItems(
                try Self.spool(scene.rows), rejectedBefore: 0, options: ItemImportOptions(onError: .abort), origin: Sample.erin, idempotency: nil
            ).value
            #expect(!aborted.applied)
            Self.expectRejects(aborted)
            // Rows the file's reading rejected abort the rest too.
            let valid = Array(scene.rows.prefix(2))
            let rejectedBefore = try await storage.importItems(
                try Self.spool(valid), rejectedBefore: 1, options: ItemImportOptions(), origin: Sample.erin, idempotency: nil
            ).value
            #expect(!rejectedBefore.applied && rejectedBefore.rejected == 0)
            #expect(try await storage.resolve(.now) == head)
            #expect(dryRun.head == head && aborted.head == head)
            #expect(try await storage.item(scene.changed.id) == scene.changed)
            #expect(try await storage.item(scene.newID) == nil)
        }
    }

    /// A row whose text differs from the item's only in its Unicode spelling (`é` against `e` and
    /// U+0301, as another tool may write it) is an update, stored as sent, not `unchanged`: text
    /// is stored, compared and filtered code point by code point.
    @Test(arguments: StorageBackend.all)
    func aRowSpelledOtherwiseInUnicodeIsAnUpdate(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let composed = Draft(name: "caf\u{E9}", color: Color(name: "\u{212B}", red: 0, green: 0, blue: 0), status: .inStock(quantity: 1))
            let decomposed = Draft(name: "cafe\u{301}", color: Color(name: "\u{C5}", red: 0, green: 0, blue: 0), status: .inStock(quantity: 1))
            let item = try await storage.createItem(id: nil, draft: composed, origin: Sample.erin, idempotency: nil).value
            let result = try await storage.importItems(
                try Self.spool([Self.row(2, decomposed, id: item.id)]), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin,
                idempotency: nil
            ).value
            #expect((result.updated, result.unchanged) == (1, 0))
            let stored = try #require(try await storage.item(item.id))
            #expect(stored.version == 2)
            #expect(Array(stored.name.unicodeScalars) == Array(decomposed.name.unicodeScalars))
            #expect(Array(try #require(stored.color).name.unicodeScalars) == ["\u{C5}"])
        }
    }

    /// An import still running `ShutdownClock.importGrace` after shutdown began gives up: nothing
    /// applied, no entry, `unavailable` (503) saying to send it again. Within the grace it applies.
    @Test(arguments: StorageBackend.all)
    func anImportGivesUpOnceShutdownHasRunItsGrace(backend: StorageBackend) async throws {
        let rows = (0..<50).map { Self.row($0 + 2, Draft(name: "Item \($0)", color: nil, status: .inStock(quantity: $0))) }
        try await withStorage(backend) { storage in
            // Its grace ends a minute from now, however slow the machine is today.
            storage.shutdownBegins(at: .now + .seconds(60))
            let result = try await storage.importItems(
                try Self.spool(rows), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: nil
            ).value
            #expect(result.applied && result.inserted == 50)
        }
        try await withStorage(backend) { storage in
            let head = try await storage.resolve(.now)
            storage.shutdownBegins(at: .now - ShutdownClock.importGrace)
            await #expect {
                try await storage.importItems(
                    try Self.spool(rows), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: nil)
            } throws: { error in
                guard case .unavailable(let message) = error as? StoreError else { return false }
                return message.contains("shutting down") && message.contains("send it again")
            }
            #expect(try await storage.resolve(.now) == head)
            #expect(try await storage.listItems(after: nil, limit: 10, query: nil, status: nil).items.isEmpty)
        }
    }

    /// More rows than the hub keeps in memory and than PostgreSQL's store gathers before it
    /// numbers them: every row is one entry, contiguous, readable from before the import.
    @Test(arguments: StorageBackend.all)
    func aLargeImportIsOneContiguousRunOfEntries(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let head = try await storage.resolve(.now)
            let count = 10_000
            let rows = (0..<count).map { Self.row($0 + 2, Draft(name: "Item \($0)", color: nil, status: .inStock(quantity: $0))) }
            let result = try await storage.importItems(
                try Self.spool(rows), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: nil
            ).value
            #expect(result.applied && result.inserted == count)
            #expect(result.head == head + Int64(count))
            var after = head
            var names: [String] = []
            while after < result.head {
                let page = try await storage.readChanges(after: after, filter: FeedFilter(user: "erin", topics: [.item]), limit: 1_000)
                #expect(page.changes.first?.seq == after + 1)
                #expect(page.changes.map(\.seq) == Array((after + 1)...(after + Int64(page.changes.count))))
                names += try page.changes.map { try JSONCoding.decoder().decode(Item.self, from: Data(try #require($0.valueJSON).utf8)).name }
                guard let last = page.changes.last else { break }
                after = last.seq
            }
            #expect(names == (0..<count).map { "Item \($0)" })
            // The store goes on: the next write follows the import.
            let next = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin, idempotency: nil).value
            let page = try await storage.readChanges(after: result.head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 10)
            #expect(page.changes.map(\.id) == [next.id.description])
        }
    }

    @Test(arguments: StorageBackend.all)
    func aRetriedImportWithItsKeyIsAppliedOnce(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let rows = [Self.row(2, Sample.keyboard), Self.row(3, Sample.mouse)]
            let request = IdempotentRequest<ItemImportResult>(
                key: IdempotencyKey(user: "erin", scope: .items, key: "upload-1"), fingerprint: "POST import abc"
            ) { result in
                guard case .success(let value) = result else { return nil }
                return TestReply(status: 200, headers: [:], body: Data("\(value.inserted)".utf8)).stored
            }
            let first = try await storage.importItems(
                try Self.spool(rows), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: request)
            #expect(first.fresh?.inserted == 2)
            let head = try await storage.resolve(.now)
            let again = try await storage.importItems(
                try Self.spool(rows), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: request)
            guard case .replayed(let stored) = again else {
                Issue.record("the retry ran again: \(again)")
                return
            }
            #expect(try TestReply(stored).body == Data("2".utf8))
            #expect(try await storage.resolve(.now) == head)
        }
    }
}
