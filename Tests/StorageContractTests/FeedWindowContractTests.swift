import Foundation
import StockroomCore
import StockroomStorage
import Testing

/// A feed page walks at most `FeedPageBuilder.scanWindow` entries of the log past its cursor, on
/// every backend: a follower of navigation alone, on a log of others' writes, gets pages that end
/// `hasMore` at the window's end until its own change, instead of one page that walks the log to
/// its head.
@Suite("Storage contract: a feed page's window")
struct FeedWindowContractTests {
    @Test(arguments: StorageBackend.all)
    func aNavigationFollowerPagesThroughOthersWritesByWindows(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let window = FeedPageBuilder.scanWindow
            let items = Int(window) * 5 / 4
            for batch in stride(from: 0, to: items, by: 1000) {
                let drafts = (batch..<min(items, batch + 1000)).map {
                    BatchItem(id: nil, draft: Draft(name: "Crate \($0)", color: nil, status: .inStock(quantity: 1)))
                }
                _ = try await storage.createItems(drafts, origin: Origin(user: "erin"))
            }
            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "phone", origin: Origin(user: "bob"))
            let head = try await storage.resolve(.now)
            #expect(head == Int64(items) + 1)

            let bob = FeedFilter(user: "bob", topics: [.navigation])
            let first = try await storage.readChanges(after: 0, filter: bob, limit: 100)
            #expect(first.changes.isEmpty && first.hasMore && first.cursor.seq == window)
            let encoded = try await storage.readEncodedChanges(after: 0, filter: bob, limit: 100)
            #expect(encoded.count == 0 && encoded.hasMore && encoded.cursor.seq == window)

            let second = try await storage.readChanges(after: first.cursor.seq, filter: bob, limit: 100)
            #expect(second.changes.map(\.seq) == [head] && !second.hasMore && second.cursor.seq == head)
            let secondEncoded = try await storage.readEncodedChanges(after: first.cursor.seq, filter: bob, limit: 100)
            #expect(secondEncoded.count == 1 && !secondEncoded.hasMore && secondEncoded.cursor.seq == head)

            // Erin's feed of both topics fills its pages from the same log as before.
            let erin = try await storage.readChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item, .navigation]), limit: 1000)
            #expect(erin.changes.count == 1000 && erin.hasMore && erin.cursor.seq == 1000)
        }
    }
}
