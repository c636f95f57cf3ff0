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
}
