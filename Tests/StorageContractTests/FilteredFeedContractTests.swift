import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// Filtered feeds (API.md, "Filtered feeds") on every backend: moves are changes, a filtered
/// snapshot plus its filtered feed stays exact, and a filter changed in place (`refilter`) equals
/// a fresh snapshot under the new filter.
@Suite("Storage contract: filtered feeds")
struct FilteredFeedContractTests {
    static let erin = Origin(user: "erin")

    static func draft(_ name: String, quantity: Int) -> Draft {
        Draft(name: name, color: nil, status: .inStock(quantity: quantity))
    }

    @Test(arguments: StorageBackend.all)
    func movesInAndOutAreChanges(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let low = try await storage.createItem(id: nil, draft: Self.draft("Cable", quantity: 3), origin: Self.erin).value
            let high = try await storage.createItem(id: nil, draft: Self.draft("Lamp", quantity: 10), origin: Self.erin).value
            _ = try await storage.updateItem(high.id, draft: Self.draft("Lamp", quantity: 2), precondition: nil, origin: Self.erin)
            _ = try await storage.updateItem(low.id, draft: Self.draft("Cable", quantity: 9), precondition: nil, origin: Self.erin)
            _ = try await storage.updateItem(low.id, draft: Self.draft("Cable", quantity: 8), precondition: nil, origin: Self.erin)
            try await storage.deleteItem(high.id, precondition: nil, origin: Self.erin)
            _ = try await storage.createItem(id: nil, draft: Self.draft("Mug", quantity: 50), origin: Self.erin)
            let head = try await storage.resolve(.now)

            let filter = FeedFilter(user: "erin", topics: [.item, .navigation], items: try ItemFilter(parsing: "quantity <= 5"))
            let page = try await storage.readChanges(after: 0, filter: filter, limit: 100)
            let changes = try page.changes.map { try JSONCoding.decoder().decode(Change.self, from: Data($0.json.utf8)) }
            let seen = changes.map { "\($0.seq) \($0.operation.rawValue) \($0.move?.rawValue ?? "-") \($0.id == low.id.description ? "low" : "high")" }
            // 1 low created (matches), 2 high created (hidden), 3 high moves in, 4 low moves out,
            // 5 low changed outside (hidden), 6 high deleted (matched), 7 a mug (hidden).
            #expect(seen == ["1 upsert - low", "3 upsert in high", "4 delete out low", "6 delete - high"])
            #expect(changes[1].item?.status == .inStock(quantity: 2), "a move in carries the whole item")
            #expect(changes[2].value == nil, "a move out carries no value")
            #expect(page.cursor.seq == head && !page.hasMore, "the cursor passes the hidden changes")

            // A page of one: each page's cursor is past what it looked at, hidden entries included.
            var cursors: [Int64] = []
            var position: Int64 = 0
            while true {
                let page = try await storage.readChanges(after: position, filter: filter, limit: 1)
                cursors.append(page.cursor.seq)
                position = page.cursor.seq
                if !page.hasMore { break }
            }
            #expect(cursors.last == head)
        }
    }

    /// The property: for random writes and random filters, a filtered snapshot plus the filtered
    /// feed from its cursor equals a fresh filtered snapshot; and a filter switched in place
    /// (`refilter`) plus the feed under the new filter equals a fresh snapshot under it, without
    /// sending again an item the client holds as it is.
    @Test(arguments: StorageBackend.all)
    func aFilteredSnapshotPlusItsFeedStaysExact(backend: StorageBackend) async throws {
        for seed in UInt64(1)...4 {
            try await withStorage(backend) { storage in
                var random = SplitMix64(seed: seed)
                var live: [ItemID] = []
                for _ in 0..<12 { live.append(try await storage.createItem(id: nil, draft: Self.randomDraft(&random), origin: Self.erin).value.id) }
                var filters: [ItemFilter] = []
                for _ in 0..<8 {
                    var budget = 6
                    filters.append(RandomFilters.filter(&random, depth: 3, budget: &budget))
                }
                var held: [(items: [ItemID: Item], cursor: FeedCursor)] = []
                for filter in filters { held.append(try await Self.snapshot(storage, filter)) }

                for _ in 0..<40 {
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0...1:
                        live.append(try await storage.createItem(id: nil, draft: Self.randomDraft(&random), origin: Self.erin).value.id)
                    case 2 where !live.isEmpty:
                        try await storage.deleteItem(live.remove(at: Int.random(in: 0..<live.count, using: &random)), precondition: nil, origin: Self.erin)
                    default:
                        guard let id = live.randomElement(using: &random) else { continue }
                        _ = try await storage.updateItem(id, draft: Self.randomDraft(&random), precondition: nil, origin: Self.erin)
                    }
                }

                for (index, filter) in filters.enumerated() {
                    let fresh = try await Self.snapshot(storage, filter)
                    var items = held[index].items
                    _ = try await Self.follow(storage, filter, from: held[index].cursor.seq, into: &items)
                    #expect(items == fresh.items, "seed \(seed), filter \(filter.text)")

                    // Switch from this filter (held as of its snapshot) to the next one.
                    let next = filters[(index + 1) % filters.count]
                    let refilter = try await storage.refilter(from: filter, to: next, since: held[index].cursor.seq)
                    let streamed = try await Self.streamedRefilter(storage, from: filter, to: next, since: held[index].cursor.seq)
                    #expect(streamed == refilter, "the streamed answer is the same, seed \(seed), \(filter.text) to \(next.text)")
                    var switched = held[index].items
                    for item in refilter.items {
                        #expect(switched[item.id] != item, "an item held as it is is not sent again: \(item.id)")
                        switched[item.id] = item
                    }
                    for id in refilter.removed { switched[id] = nil }
                    _ = try await Self.follow(storage, next, from: refilter.cursor.seq, into: &switched)
                    let freshNext = try await Self.snapshot(storage, next)
                    #expect(switched == freshNext.items, "seed \(seed), \(filter.text) to \(next.text)")
                }
            }
        }
    }

    /// The route's answer: `streamRefilter`'s chunks, collected and decoded.
    static func streamedRefilter(_ storage: any Storage, from old: ItemFilter?, to new: ItemFilter?, since: Int64) async throws -> Refilter {
        struct Answer: Decodable {
            let items: [Item]
            let removed: [ItemID]
            let cursor: String
        }
        let pipe = storage.streamRefilter(from: old, to: new, since: since, depth: 4, stallTimeout: .seconds(60))
        var bytes: [UInt8] = []
        while let chunk = try await pipe.next() { bytes += chunk }
        let answer = try JSONCoding.decoder().decode(Answer.self, from: Data(bytes))
        return Refilter(items: answer.items, removed: answer.removed, cursor: try #require(FeedCursor(encoded: answer.cursor)))
    }

    /// An answer of many chunks (items of a few hundred bytes, past `ItemStreamEncoding.chunkBytes`
    /// several times over) is the one `refilter` gives, items and removed ids alike; a trimmed cursor
    /// is the stream's error before any chunk.
    @Test(arguments: StorageBackend.all)
    func aStreamedRefilterOfManyChunksIsTheRefilter(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            var ids: [ItemID] = []
            for index in 0..<600 {
                ids.append(try await storage.createItem(id: nil, draft: Self.draft("Cable \(index) " + String(repeating: "é", count: 150), quantity: index % 10), origin: Self.erin).value.id)
            }
            let since = try await storage.resolve(.now)
            for id in ids.prefix(40) { _ = try await storage.updateItem(id, draft: Self.draft("Moved", quantity: 7), precondition: nil, origin: Self.erin) }
            for id in ids.suffix(30) { try await storage.deleteItem(id, precondition: nil, origin: Self.erin) }
            var (mostItems, mostRemoved) = (0, 0)
            for (old, new) in [(nil, "quantity < 5"), ("quantity < 5", "quantity >= 5"), ("quantity >= 5", nil), ("quantity = 7", "quantity = 3")] as [(String?, String?)] {
                let from = try old.map { try ItemFilter(parsing: $0) }
                let to = try new.map { try ItemFilter(parsing: $0) }
                let refilter = try await storage.refilter(from: from, to: to, since: since)
                #expect(try await Self.streamedRefilter(storage, from: from, to: to, since: since) == refilter, "\(old ?? "all") to \(new ?? "all")")
                mostItems = max(mostItems, refilter.items.count)
                mostRemoved = max(mostRemoved, refilter.removed.count)
            }
            // Some answer's items (about 330 bytes each) fill several chunks, and some remove many.
            #expect(mostItems >= 250 && mostRemoved >= 250, "\(mostItems) items, \(mostRemoved) removed at most")
            try await storage.trimChanges(maxAge: .seconds(3600), maxEntries: 2)
            let pipe = storage.streamRefilter(from: nil, to: nil, since: since, depth: 4, stallTimeout: .seconds(60))
            await #expect(throws: StoreError.self) { _ = try await pipe.next() }
        }
    }

    @Test(arguments: StorageBackend.all)
    func aRefilterFromATrimmedCursorIsRefused(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            for index in 0..<5 { _ = try await storage.createItem(id: nil, draft: Self.draft("Cable \(index)", quantity: index), origin: Self.erin) }
            try await storage.trimChanges(maxAge: .seconds(3600), maxEntries: 2)
            let filter = try ItemFilter(parsing: "quantity < 3")
            await #expect(throws: StoreError.self) { try await storage.refilter(from: nil, to: filter, since: 1) }
            let refilter = try await storage.refilter(from: nil, to: filter, since: 3)
            #expect(refilter.items.isEmpty, "every item matching is held (an unfiltered client holds everything) and unchanged since 3")
            #expect(refilter.removed.count == 2, "the two items changed since 3 do not match")
        }
    }

    static func randomDraft(_ random: inout SplitMix64) -> Draft {
        let names = RandomFilters.names.filter { !$0.isEmpty }
        let status: Status = Bool.random(using: &random)
            ? .inStock(quantity: [0, 1, 3, 5, 10, 20].randomElement(using: &random)!)
            : .outOfStock(isOnBackOrder: Bool.random(using: &random))
        let color = RandomFilters.colors.randomElement(using: &random)!.map { Color(name: $0, red: 0.5, green: 0.5, blue: 0.5) }
        return Draft(name: names.randomElement(using: &random)!, color: color, status: status)
    }

    /// A snapshot under `filter`: its items by id, and its cursor.
    static func snapshot(_ storage: any Storage, _ filter: ItemFilter) async throws -> (items: [ItemID: Item], cursor: FeedCursor) {
        let pipe = storage.streamSnapshot(user: "erin", items: filter, depth: 4, stallTimeout: .seconds(30))
        var bytes: [UInt8] = []
        while let chunk = try await pipe.next() { bytes += chunk }
        let snapshot = try JSONCoding.decoder().decode(Snapshot.self, from: Data(bytes))
        #expect(snapshot.items.allSatisfy(filter.matches))
        return (Dictionary(uniqueKeysWithValues: snapshot.items.map { ($0.id, $0) }), snapshot.cursor)
    }

    /// Applies the feed under `filter` after `seq` to `items`, in small pages; returns the last cursor.
    static func follow(_ storage: any Storage, _ filter: ItemFilter, from seq: Int64, into items: inout [ItemID: Item]) async throws -> Int64 {
        let feed = FeedFilter(user: "erin", topics: [.item], items: filter)
        var position = seq
        while true {
            let page = try await storage.readChanges(after: position, filter: feed, limit: 3)
            for entry in page.changes {
                let change = try JSONCoding.decoder().decode(Change.self, from: Data(entry.json.utf8))
                let id = try #require(ItemID(change.id))
                if let item = change.item { items[id] = item } else { items[id] = nil }
            }
            position = page.cursor.seq
            if !page.hasMore { return position }
        }
    }
}
