import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// A batch create (`createItems`) on every backend: one transaction, each entry created or refused
/// on its own, answered in the order given. (The mixed batch moved from
/// StockroomStoreTests/SnapshotStreamTests.)
@Suite("Storage contract: batch import")
struct BatchImportContractTests {
    /// Why an entry of a batch is refused.
    enum Refusal: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Its id is an item's that already exists.
        case existingID
        /// Its draft is invalid (a blank name).
        case invalidDraft
        /// Its new id is the same as an earlier entry's in the same batch.
        case sameNewIDTwice

        var description: String { rawValue }
    }

    static func draft(_ index: Int) -> Draft {
        Draft(name: "Batch \(index)", color: nil, status: .inStock(quantity: index))
    }

    /// A batch holding several kinds of refusal among valid entries: each valid one is created, each
    /// refused one answered alone, in order; the log holds the created items in batch order.
    @Test(arguments: StorageBackend.all)
    func aBatchCreatesEachValidItemAndRefusesTheRestAlone(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let existing = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let fresh = ItemID.random()
            let batch = [
                BatchItem(id: nil, draft: Sample.mouse),
                BatchItem(id: existing.id, draft: Sample.keyboard),
                BatchItem(id: nil, draft: Sample.blankName),
                BatchItem(id: fresh, draft: Sample.bluetooth),
                BatchItem(id: fresh, draft: Sample.bluetooth),
            ]
            guard case .fresh(let outcomes) = try await storage.createItems(batch, origin: Sample.erin) else {
                Issue.record("no idempotency key, no replay")
                return
            }
            let summary = outcomes.map { outcome -> String in
                switch outcome {
                case .created(let item): "created \(item.name)"
                case .refused(.alreadyExists(let id)): "exists \(id == existing.id ? "existing" : id == fresh ? "fresh" : "\(id)")"
                case .refused(.domain(let error)): "refused \(error)"
                case .refused(let error): "other \(error)"
                }
            }
            #expect(summary == ["created Mouse", "exists existing", "refused \(Sample.blankNameError)", "created Bluetooth Keyboard", "exists fresh"])
            let changes = try await storage.readChanges(after: 1, filter: FeedFilter(user: "erin", topics: [.item]), limit: 10)
            #expect(changes.changes.map(\.id) == outcomes.compactMap { if case .created(let item) = $0 { item.id.description } else { nil } })
            #expect(try await storage.item(existing.id) == existing)
        }
    }

    /// One refused entry among many valid ones: the others are all created, in order, with
    /// consecutive change entries; the refused one is answered alone, where it stood.
    @Test(arguments: StorageBackend.all, Refusal.allCases)
    func oneRefusedEntryAmongManyIsAnsweredAlone(backend: StorageBackend, refusal: Refusal) async throws {
        try await withStorage(backend) { storage in
            let existing = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            var batch = (0..<9).map { BatchItem(id: $0.isMultiple(of: 2) ? ItemID.random() : nil, draft: Self.draft($0)) }
            let refused = 6
            let expected: Failure
            switch refusal {
            case .existingID:
                batch[refused].id = existing.id
                expected = .alreadyExists(existing.id)
            case .invalidDraft:
                batch[refused].draft = Sample.blankName
                expected = .domain(Sample.blankNameError)
            case .sameNewIDTwice:
                let earlier = try #require(batch[2].id)
                batch[refused].id = earlier
                expected = .alreadyExists(earlier)
            }
            let head = try await storage.resolve(.now)

            let outcomes = try #require(try await storage.createItems(batch, origin: Sample.erin).fresh)
            try #require(outcomes.count == batch.count)
            var created: [Item] = []
            for (index, outcome) in outcomes.enumerated() {
                switch outcome {
                case .created(let item):
                    #expect(index != refused, "entry \(index) was created")
                    #expect(item.name == batch[index].draft.name && item.status == batch[index].draft.status && item.version == 1, "entry \(index)")
                    if let id = batch[index].id { #expect(item.id == id, "entry \(index)") }
                    created.append(item)
                case .refused(let error):
                    #expect(index == refused, "entry \(index) was refused: \(error)")
                    #expect(Failure(error) == expected)
                }
            }
            #expect(created.count == batch.count - 1)
            for item in created { #expect(try await storage.item(item.id) == item) }
            #expect(try await storage.item(existing.id) == existing)
            #expect(try await observe(storage).items == [existing] + created)
            #expect(
                try await loggedChanges(storage, after: head)
                    == created.enumerated().map { .itemUpsert(head + 1 + Int64($0.offset), $0.element, Sample.erin) })
        }
    }

    /// 409 comes before 422 in a batch too: an entry with an existing id and an invalid draft is
    /// refused as existing.
    @Test(arguments: StorageBackend.all)
    func anEntryWithAnExistingIDAndAnInvalidDraftIsRefusedAsExisting(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let existing = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let batch = [
                BatchItem(id: nil, draft: Sample.mouse),
                BatchItem(id: existing.id, draft: Sample.blankName),
                BatchItem(id: nil, draft: Sample.bluetooth),
            ]
            let outcomes = try #require(try await storage.createItems(batch, origin: Sample.erin).fresh)
            try #require(outcomes.count == 3)
            guard case .created = outcomes[0], case .refused(let error) = outcomes[1], case .created = outcomes[2] else {
                Issue.record("unexpected outcomes \(outcomes)")
                return
            }
            #expect(Failure(error) == .alreadyExists(existing.id))
            #expect(try await storage.item(existing.id) == existing)
        }
    }
}
