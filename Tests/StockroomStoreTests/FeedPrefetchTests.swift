import Foundation
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

/// Catching up from deep in the log reads the next page ahead (issue #13); what a client gets must
/// be what the log answers, and a cursor trimmed away meanwhile is still refused.
@Suite("Feed pages read ahead")
struct FeedPrefetchTests {
    @Test func pagesReadAheadAreThePagesOfTheLogAndATrimStillRefuses() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            // More entries than the hub keeps in memory, so that the first pages come from the log.
            for batch in 0..<12 {
                let items = (0..<1000).map { BatchItem(id: nil, draft: Draft(name: "\(batch)-\($0)", color: nil, status: .inStock(quantity: $0))) }
                _ = try await database.createItems(items, origin: Sample.erin)
            }
            let filter = FeedFilter(user: "erin", topics: [.item, .navigation])
            var seq: Int64 = 0
            var pages = 0
            while true {
                let page = try await database.readEncodedChanges(after: seq, filter: filter, limit: 1000)
                let after = seq
                let direct = try await database.writer.read { db in
                    try AppDatabase.encodedLoggedChanges(db, after: after, filter: filter, limit: 1000, epoch: database.epoch)
                }
                #expect(page == direct, "after \(after)")
                seq = page.cursor.seq
                pages += 1
                if !page.hasMore { break }
            }
            #expect(pages == 12)
            #expect(seq == 12_000)

            // A page is read ahead, then the log is trimmed past it: the cursor is refused all the same.
            let first = try await database.readEncodedChanges(after: 0, filter: filter, limit: 1000)
            #expect(first.hasMore && first.cursor.seq == 1000)
            #expect(try await database.trimChanges(maxAge: .seconds(3600), maxEntries: 6000) == 6000)
            #expect(await failure { try await database.readEncodedChanges(after: 1000, filter: filter, limit: 1000) } == .resyncRequired)
        }
    }
}
