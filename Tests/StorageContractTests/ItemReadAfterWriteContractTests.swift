import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// An item read, then written by any of the writes that change items, reads as written as soon as
/// the write returns (SQLite's store answers reads of known items from memory; this is what says
/// each write makes it forget them).
@Suite("Storage contract: an item read before a write reads as written after it")
struct ItemReadAfterWriteContractTests {
    @Test(arguments: StorageBackend.all)
    func everyWriteOfAnItemIsReadBackAtOnce(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erin = Sample.erin("phone")
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            #expect(try await storage.item(keyboard.id) == keyboard)
            #expect(try await storage.item(keyboard.id) == keyboard)

            // PUT
            let replaced = try await storage.updateItem(keyboard.id, draft: Sample.bluetooth, precondition: nil, origin: Sample.erin).value
            #expect(try await storage.item(keyboard.id) == replaced)

            // An edit saved by a command
            _ = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: erin)
            _ = try await storage.runCommand(.updateDraft(draft: Sample.mouse), clientID: "phone", origin: erin)
            #expect(try await storage.item(keyboard.id) == replaced)
            let saved = try #require(try await storage.runCommand(.save(), clientID: "phone", origin: erin).value.item)
            #expect(saved.version == 3)
            #expect(try await storage.item(keyboard.id) == saved)

            // A small import updating it by id
            let small = try await storage.importItems(
                try ImportContractTests.spool([ImportContractTests.row(2, Sample.keyboard, id: keyboard.id)]), rejectedBefore: 0,
                options: ItemImportOptions(), origin: Sample.erin, idempotency: nil
            ).value
            #expect(small.updated == 1)
            let imported = try #require(try await storage.item(keyboard.id))
            #expect(imported.version == 4 && imported.name == Sample.keyboard.name)
            #expect(try await storage.item(keyboard.id) == imported)

            // An import with more rows than the hub keeps in memory, the item in its first row (its entry
            // is not among those the hub keeps)
            let count = ChangeHub.recentCapacity + 10
            let rows = (0..<count).map { index in
                index == 0
                    ? ImportContractTests.row(index + 2, Sample.mouse, id: keyboard.id)
                    : ImportContractTests.row(index + 2, Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: index)))
            }
            let large = try await storage.importItems(
                try ImportContractTests.spool(rows), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: nil
            ).value
            #expect(large.applied && large.updated == 1 && large.inserted == count - 1)
            let afterLarge = try #require(try await storage.item(keyboard.id))
            #expect(afterLarge.version == 5 && afterLarge.name == Sample.mouse.name)

            // A delete
            try await storage.deleteItem(keyboard.id, precondition: nil, origin: Sample.erin)
            #expect(try await storage.item(keyboard.id) == nil)
        }
    }
}
