import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// The hub holds the log's newest entries with no gap: fed the same entries several times, late or
/// ahead (a local commit racing a catch-up read, as with several daemons on one database), it
/// never skips nor repeats one.
@Suite("ChangeHub")
struct ChangeHubTests {
    static let epoch = "e1"
    static let everything = FeedFilter(user: "erin", topics: [.item, .navigation])

    static func entry(_ seq: Int64) -> ChangeEntry {
        ChangeEntry(
            seq: seq, entity: .item, op: .upsert, id: "item-\(seq)", owner: nil, valueJSON: "{\"n\":\(seq)}",
            originClientID: nil, originIdempotencyKey: nil, at: 1_000 + seq, epoch: epoch)
    }

    @Test
    func entriesBehindTheHeadAreSkippedAndAGapIsRefused() {
        let hub = ChangeHub(head: 10, trimmedThrough: 0, epoch: Self.epoch)
        #expect(hub.committed([Self.entry(11), Self.entry(12)]))
        // Already published: nothing changes, nothing is repeated.
        #expect(hub.committed([Self.entry(9), Self.entry(10), Self.entry(11)]))
        #expect(hub.head == 12)
        // Overlapping: only 13 is new.
        #expect(hub.committed([Self.entry(12), Self.entry(13)]))
        // 15 would leave 14 out: refused, and the hub is as it was.
        #expect(!hub.committed([Self.entry(15)]))
        #expect(hub.head == 13)
        let page = hub.recentChanges(after: 10, filter: Self.everything, limit: 100)
        #expect(page?.changes.map(\.seq) == [11, 12, 13])
        #expect(page?.cursor == FeedCursor(epoch: Self.epoch, seq: 13))
    }

    /// What a live delivery takes from memory (`forEachRecentChange`, no page built) is exactly the
    /// page `recentChanges` answers, for every cursor, topic, owner and limit; where that page is
    /// not complete (more than the limit, past the byte budget, an item filter, a cursor memory does
    /// not hold) it takes nothing and answers nil, so the stream reads a page instead.
    @Test
    func aLiveDeliveryTakesWhatTheCompletePageHolds() throws {
        let hub = ChangeHub(head: 0, trimmedThrough: 0, epoch: Self.epoch)
        let entities: [ChangeEntity] = [.item, .navigation, .presence]
        let log = (1...30).map { seq in
            let entity = entities[seq % 3]
            return ChangeEntry(
                seq: Int64(seq), entity: entity, op: .upsert, id: "id-\(seq)", owner: entity == .item ? nil : (seq % 2 == 0 ? "erin" : "otto"),
                valueJSON: "{\"n\":\(seq)}", originClientID: nil, originIdempotencyKey: nil, at: 1_000, epoch: Self.epoch)
        }
        #expect(hub.committed(log))
        var filters = [
            FeedFilter(user: "erin", topics: [.item]), FeedFilter(user: "erin", topics: [.navigation]),
            FeedFilter(user: "otto", topics: [.item, .navigation]), FeedFilter(user: "erin", topics: [.presence]),
            FeedFilter(user: "otto", topics: [.item, .navigation, .presence]), FeedFilter(user: "nobody", topics: [.navigation, .presence]),
        ]
        // Topics changed after the filter was made count as the new ones.
        var changed = FeedFilter(user: "otto", topics: [.item])
        changed.topics = [.presence]
        filters.append(changed)
        var complete = 0
        for filter in filters {
            for limit in [1, 3, 100] {
                for seq in Int64(0)...30 {
                    let page = try #require(hub.recentChanges(after: seq, filter: filter, limit: limit))
                    var taken: [ChangeEntry] = []
                    let live = hub.forEachRecentChange(after: seq, filter: filter, limit: limit) { taken.append($0) }
                    if page.hasMore {
                        #expect(live == nil && taken.isEmpty, "after \(seq), \(filter), limit \(limit)")
                    } else {
                        complete += 1
                        #expect(taken == page.changes, "after \(seq), \(filter), limit \(limit)")
                        #expect(live?.last == page.changes.last?.seq && live?.cursor == page.cursor)
                    }
                }
            }
        }
        #expect(complete > 100)
        #expect(hub.recentChanges(after: 0, filter: changed, limit: 100)?.changes.map(\.seq) == [5, 11, 17, 23, 29])
        // An item filter, a cursor past the head, and a trimmed cursor: nil, nothing taken.
        var taken = 0
        let filtered = FeedFilter(user: "erin", topics: [.item], items: try ItemFilter(parsing: "quantity = 1"))
        #expect(hub.forEachRecentChange(after: 0, filter: filtered, limit: 100) { _ in taken += 1 } == nil)
        #expect(hub.forEachRecentChange(after: 31, filter: filters[0], limit: 100) { _ in taken += 1 } == nil)
        hub.trimmed(through: 5)
        #expect(hub.forEachRecentChange(after: 4, filter: filters[0], limit: 100) { _ in taken += 1 } == nil)
        #expect(taken == 0)

        // Past the byte budget: the page has more, the live path takes nothing.
        let large = ChangeHub(head: 0, trimmedThrough: 0, epoch: Self.epoch)
        let value = "{\"name\":\"" + String(repeating: "x", count: FeedPage.byteBudget / 2) + "\"}"
        #expect(large.committed((1...3).map {
            ChangeEntry(
                seq: $0, entity: .item, op: .upsert, id: "big-\($0)", owner: nil, valueJSON: value, originClientID: nil,
                originIdempotencyKey: nil, at: 1_000, epoch: Self.epoch)
        }))
        #expect(large.recentChanges(after: 0, filter: filters[0], limit: 100)?.hasMore == true)
        #expect(large.forEachRecentChange(after: 0, filter: filters[0], limit: 100) { _ in taken += 1 } == nil && taken == 0)
        // One such change alone is a complete page, as in `recentChanges`.
        #expect(large.forEachRecentChange(after: 2, filter: filters[0], limit: 100) { _ in taken += 1 }?.last == 3 && taken == 1)
    }

    /// Random runs of a log of 200 entries, delivered from random starting points in random
    /// order: a refused run is followed by the read of its gap from the log, as a feeder does.
    /// After every call the hub serves exactly the log's prefix up to its head.
    @Test(arguments: 0..<20)
    func randomlyInterleavedDeliveriesNeverSkipOrRepeat(round: Int) {
        var generator = SplitMix64(seed: UInt64(round) &+ 0x5eed)
        let log = (1...200).map { Self.entry(Int64($0)) }
        let hub = ChangeHub(head: 0, trimmedThrough: 0, epoch: Self.epoch)
        var refusals = 0
        while hub.head < 200 {
            let start = Int(generator.next() % 200)
            let count = 1 + Int(generator.next() % 8)
            let run = Array(log[start..<min(200, start + count)])
            if !hub.committed(run) {
                refusals += 1
                // The feeder reads what lies between the hub's head and the run, then publishes both.
                #expect(hub.committed(Array(log[Int(hub.head)..<Int(run.last!.seq)])))
            }
            let page = hub.recentChanges(after: 0, filter: Self.everything, limit: 1_000)
            #expect(page?.changes.map(\.seq) == Array((0..<hub.head).map { $0 + 1 }))
        }
        #expect(refusals > 0)
    }

    /// Random commits of items and of two users' navigation, and a stream of Erin's navigation that
    /// reads at random moments, sometimes only part of what is new (a page with more): whenever
    /// asked, `unconcerned` names no position past an entry of hers after the stream's. After a
    /// read of everything, it names the head while none came, then the place before the first that
    /// did. A filter change, and a head moved without entries, make it forget what it knew.
    @Test(arguments: 0..<20)
    func whatTheHubKnowsDidNotConcernAStream(round: Int) {
        var generator = SplitMix64(seed: UInt64(round) &+ 0xc0ffee)
        let hub = ChangeHub(head: 0, trimmedThrough: 0, epoch: Self.epoch)
        var log: [ChangeEntry] = []
        func concerns(_ entry: ChangeEntry) -> Bool { entry.entity == .navigation && entry.owner == "erin" }
        let filter = FeedFilter(user: "erin", topics: [.navigation])
        let subscription = hub.subscribe(filter)
        var position: Int64 = 0
        /// Since the stream last read everything (nil: it has not, or the hub forgot since): the
        /// first entry of hers committed after that read.
        var sinceFullRead: (first: Int64?, Void)?
        var headsNamed = 0
        var skips = 0
        for _ in 0..<300 {
            switch generator.next() % 10 {
            case 0..<5:
                // A commit of one to four entries, mostly items.
                var batch: [ChangeEntry] = []
                for _ in 0..<(1 + generator.next() % 4) {
                    let seq = Int64(log.count + batch.count + 1)
                    let kind = generator.next() % 8
                    batch.append(
                        ChangeEntry(
                            seq: seq, entity: kind < 6 ? .item : .navigation, op: .upsert, id: "id-\(seq)",
                            owner: kind < 6 ? nil : (kind == 6 ? "erin" : "otto"), valueJSON: "{}", originClientID: nil,
                            originIdempotencyKey: nil, at: 1, epoch: Self.epoch))
                }
                log += batch
                #expect(hub.committed(batch))
                if let known = sinceFullRead, known.first == nil, let first = batch.first(where: concerns) {
                    sinceFullRead = (first.seq, ())
                }
            case 5..<7:
                // The stream reads everything new, or only up to its next entry (a full page).
                let next = log.first { $0.seq > position && concerns($0) }?.seq
                position = generator.next() % 2 == 0 ? hub.head : (next ?? hub.head)
                subscription.read(through: position)
                sinceFullRead = position == hub.head ? (nil, ()) : nil
            case 7:
                // Rarely: the filter changes in place, or the head moves on without its entries.
                sinceFullRead = nil
                if generator.next() % 2 == 0 {
                    hub.change(subscription, to: filter)
                } else {
                    let seq = Int64(log.count + 1)
                    log.append(
                        ChangeEntry(
                            seq: seq, entity: .navigation, op: .upsert, id: "id-\(seq)", owner: "erin", valueJSON: "{}",
                            originClientID: nil, originIdempotencyKey: nil, at: 1, epoch: Self.epoch))
                    hub.skipped(to: seq)
                }
            default:
                let firstConcerning = log.first { $0.seq > position && concerns($0) }?.seq
                let named = hub.unconcerned(subscription, after: position)
                if let named {
                    #expect(named >= position && named <= hub.head)
                    #expect(firstConcerning.map { named < $0 } ?? true, "named \(named) past \(firstConcerning!) from \(position)")
                    if named > position { skips += 1 }
                }
                if let known = sinceFullRead {
                    #expect(named == (known.first.map { $0 - 1 } ?? hub.head), "after a read of everything up to \(position)")
                    if known.first == nil { headsNamed += 1 }
                }
            }
        }
        #expect(headsNamed > 0 && skips > 0)
        subscription.cancel()
    }
}

/// The hub wakes filtered subscribers through the filter index: exactly those whose filter the
/// item matched before the write or matches after it, among many that it does not.
@Suite("ChangeHub with item filters")
struct ChangeHubFilterTests {
    static func itemJSON(quantity: Int) -> String {
        #"{"id":"6f1c2e4a-0000-4000-8000-000000000001","name":"Lamp","color":null,"status":{"inStock":{"quantity":\#(quantity)}},"version":1,"createdAt":"2026-11-22T06:00:00.000Z","updatedAt":"2026-11-22T06:00:00.000Z"}"#
    }

    @Test
    func aWriteWakesTheFiltersItsItemMatchedBeforeOrMatchesAfter() throws {
        let hub = ChangeHub(head: 0, trimmedThrough: 0, epoch: "e1")
        var subscriptions: [FeedSubscription] = []
        for quantity in 0..<1_000 {
            let filter = try ItemFilter(parsing: quantity.isMultiple(of: 2) ? "quantity = \(quantity)" : "quantity >= \(quantity) and quantity <= \(quantity)")
            subscriptions.append(hub.subscribe(FeedFilter(user: "erin", topics: [.item], items: filter)))
        }
        let navigationOnly = hub.subscribe(FeedFilter(user: "erin", topics: [.navigation], items: try ItemFilter(parsing: "quantity = 5")))
        // Quantity 7 becomes 500: the filters of 7 (a move out) and of 500 (a move in) wake.
        let entry = ChangeEntry(
            seq: 1, entity: .item, op: .upsert, id: "6f1c2e4a-0000-4000-8000-000000000001", owner: nil,
            valueJSON: Self.itemJSON(quantity: 500), before: .item(json: Self.itemJSON(quantity: 7)), originClientID: nil,
            originIdempotencyKey: nil, at: 1, epoch: "e1")
        #expect(hub.committed([entry]))
        let woken = subscriptions.indices.filter { subscriptions[$0].park(until: .now) { _ in } == true }
        #expect(woken == [7, 500])
        #expect(navigationOnly.park(until: .now) { _ in } == nil, "a subscriber not following items is not woken")
        let page = try #require(hub.recentChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item], items: try ItemFilter(parsing: "quantity = 7")), limit: 10))
        #expect(page.changes.map(\.move) == [.out])
        for subscription in subscriptions + [navigationOnly] { subscription.cancel() }
        #expect(hub.subscriberCount == 0)
    }
}
