import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// Every field of the table (`ItemFields`) through each backend: written by a create, a batch, a
/// replacement and a save from a draft held in navigation, and read back by an item read, the
/// list, the feed's bytes and the snapshot. A field a store drops or mangles fails here.
@Suite("Item fields through the stores")
struct ItemFieldContractTests {
    static let erin = Origin(user: "erin", clientID: "erins-phone")

    @Test(arguments: StorageBackend.all)
    func everyFieldSurvivesEveryWriteAndRead(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let drafts = ItemFields.drafts
            var written: [Item] = []
            // A create, then a replacement with the next draft: both of each draft's values are written.
            for (index, draft) in drafts.enumerated() {
                let created = try await storage.createItem(id: nil, draft: draft, origin: Self.erin).value
                #expect(created.draft == draft)
                let next = drafts[(index + 1) % drafts.count]
                let replaced = try await storage.updateItem(created.id, draft: next, precondition: .oneOf([1]), origin: Self.erin).value
                #expect(replaced.draft == next && replaced.version == 2)
                written.append(replaced)
            }
            // The batch route.
            let batch = try await storage.createItems(drafts.map { BatchItem(id: nil, draft: $0) }, origin: Self.erin).value
            for (draft, outcome) in zip(drafts, batch) {
                guard case .created(let item) = outcome else {
                    Issue.record("\(draft) refused: \(outcome)")
                    continue
                }
                #expect(item.draft == draft)
                written.append(item)
            }
            // A save of a draft held in the navigation state (stored as the device's JSON until then).
            let target = written[0]
            for draft in drafts {
                _ = try await storage.runCommand(.openEdit(itemID: target.id), clientID: "erins-phone", origin: Self.erin)
                let edited = try await storage.runCommand(.updateDraft(draft: draft), clientID: "erins-phone", origin: Self.erin).value
                #expect(edited.navigation.state.destination?.draft == draft)
                #expect(try await storage.navigation(clientID: "erins-phone", user: "erin").state.destination?.draft == draft)
                let saved = try await storage.runCommand(.save(), clientID: "erins-phone", origin: Self.erin).value
                #expect(saved.item?.draft == draft)
                if let item = saved.item { written[0] = item }
            }

            // Every read gives back what was written.
            for item in written { #expect(try await storage.item(item.id) == item) }
            let listed = try await storage.listItems(after: nil, limit: 100, query: nil, status: nil).items
            #expect(Set(listed) == Set(written))

            let page = try await storage.readEncodedChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 1000)
            let changes = try JSONCoding.decoder().decode([Change].self, from: Data("[".utf8 + page.changesJSON + "]".utf8))
            var last: [ItemID: Item] = [:]
            for change in changes { if case .item(let item) = change.value { last[item.id] = item } }
            #expect(Set(last.values) == Set(written), "the feed's last value of each item is the item")

            let pipe = storage.streamSnapshot(user: "erin", items: nil, depth: 4, stallTimeout: .seconds(30))
            var bytes: [UInt8] = []
            while let chunk = try await pipe.next() { bytes += chunk }
            let snapshot = try JSONCoding.decoder().decode(Snapshot.self, from: Data(bytes))
            #expect(Set(snapshot.items) == Set(written))
        }
    }
}
