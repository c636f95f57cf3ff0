import Foundation
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

/// A feed answer is bounded by bytes as well as by count (issue #14, point 4).
@Suite("Feed byte budget")
struct FeedByteBudgetTests {
    @Test func pagesStopAtTheByteBudgetAndContinueFromTheirCursor() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            let name = String(repeating: "e" + String(repeating: "\u{301}", count: 20), count: 190)  // 7,790 bytes
            _ = try await database.runCommand(.openAdd, clientID: "tab", origin: Sample.erin("tab"))
            for index in 0..<150 {
                _ = try await database.runCommand(
                    .updateDraft(draft: Draft(name: "\(index)" + name, color: nil, status: .inStock(quantity: 1))),
                    clientID: "tab", origin: Sample.erin("tab"))
            }
            let filter = FeedFilter(user: "erin", topics: [.navigation])
            for read in [database.readChanges, database.readLoggedChanges] {
                var seq: Int64 = 0
                var seen: [Int64] = []
                var pages = 0
                while true {
                    let page = try await read(seq, filter, 1000)
                    #expect(page.changes.map { $0.json.utf8.count }.reduce(0, +) <= FeedPage.byteBudget)
                    seen += page.changes.map(\.seq)
                    seq = page.cursor.seq
                    pages += 1
                    if !page.hasMore { break }
                    #expect(page.cursor.seq == page.changes.last?.seq)
                }
                #expect(pages >= 2, "151 changes of ~8 KB do not fit one page")
                #expect(seen == Array(1...151))
            }
        }
    }
}
