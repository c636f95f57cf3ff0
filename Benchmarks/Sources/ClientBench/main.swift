// SyncedStore's figures, timed with ContinuousClock (medians of RUNS runs, default 7):
//   1. applying 10,000 feed changes to a store of 10,000 items (target <= 100 ms),
//   2. a cold start from a snapshot of 10,000 items: the answer's JSON decoded and loaded (target <= 1 s),
//   3. a command's optimistic update: visible when `send` returns, with no server at all to answer,
//   4. 10,000 feed changes applied with `items` read after each (a list on screen),
//   5. with STOCKROOM_URL and STOCKROOM_TOKEN (a running server, e.g. `stockroom serve --demo`):
//      DRAIN (default 10,000) commands queued offline, then delivered (once, not RUNS times);
//      with CATCHUP=N instead, the feed followed from the beginning of the server's log until N
//      changes have come, by a ChangeFeed alone, by a SyncedStore applying each change and by one
//      applying each batch the feed hands over (once each; Benchmarks/feed/catchup.sh compares them
//      with the server's own rate). CATCHUP_ONLY=<a reader, as printed> runs only that one.
//   6. with APPLY_NEW=N instead of all of the above: N new items applied in batches (`applyNew`).
//
// swift run -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench ClientBench
import Foundation
import StockroomClient

let runs = Int(ProcessInfo.processInfo.environment["RUNS"] ?? "") ?? 7
let itemCount = 10_000
let changeCount = 10_000

/// A client of a port where nothing listens: whatever the store sends gets no answer.
let nowhere = StockroomClient(baseURL: URL(string: "http://127.0.0.1:9")!, token: "sr_benchmark")
let epochDate = Date(timeIntervalSince1970: 1_790_000_000)

func makeItems(_ count: Int) -> [Item] {
    let red = Color(name: "Red", red: 1, green: 0, blue: 0)
    return (0..<count).map { (index: Int) -> Item in
        let color: Color? = index % 3 == 0 ? red : nil
        let status: Status = index % 5 == 0 ? .outOfStock(isOnBackOrder: index % 2 == 0) : .inStock(quantity: index)
        let created = epochDate.addingTimeInterval(Double(index) / 1000)
        return Item(id: .random(), name: "Item \(index)", color: color, status: status, version: 1, createdAt: created, updatedAt: created)
    }
}

/// 10,000 changes as a busy feed brings them: updates of existing items (80%), new items (10%),
/// deletes (5%), and other devices' navigation (5%).
func makeChanges(items: [Item]) -> [Change] {
    var versions = Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0.version) })
    var live = items.map(\.id)
    var changes: [Change] = []
    var seq = 1
    func change(_ entity: Change.Entity, _ op: Change.Operation, _ id: String, _ value: Change.Value?, device: ClientID) -> Change {
        defer { seq += 1 }
        return Change(
            seq: seq, cursor: FeedCursor(epoch: "be", seq: Int64(seq)), entity: entity, operation: op, id: id, value: value,
            origin: .init(clientID: device, idempotencyKey: "key-\(seq)"), at: epochDate.addingTimeInterval(Double(seq)))
    }
    for index in 0..<changeCount {
        let device: ClientID = index % 2 == 0 ? "tablet" : "laptop"
        switch index % 20 {
        case 0, 1:
            let item = Item(
                id: .random(), name: "New \(index)", color: nil, status: .inStock(quantity: 1), version: 1,
                createdAt: epochDate.addingTimeInterval(100 + Double(index)), updatedAt: epochDate.addingTimeInterval(100 + Double(index)))
            live.append(item.id)
            versions[item.id] = 1
            changes.append(change(.item, .upsert, item.id.description, .item(item), device: device))
        case 2:
            let id = live.remove(at: (index * 7919) % live.count)
            changes.append(change(.item, .delete, id.description, nil, device: device))
        case 3:
            let target = live[(index * 104_729) % live.count]
            let navigation = Navigation(
                clientID: device,
                state: NavigationState(destination: .edit(itemID: target, baseVersion: versions[target]!, draft: .blank)),
                version: index, updatedAt: epochDate.addingTimeInterval(Double(index)))
            changes.append(change(.navigation, .upsert, device.rawValue, .navigation(navigation), device: device))
        default:
            let id = live[(index * 31) % live.count]
            let version = versions[id]! + 1
            versions[id] = version
            let item = Item(
                id: id, name: "Renamed \(index)", color: nil, status: .inStock(quantity: index), version: version,
                createdAt: epochDate, updatedAt: epochDate.addingTimeInterval(Double(index)))
            changes.append(change(.item, .upsert, id.description, .item(item), device: device))
        }
    }
    return changes
}

func median(_ values: [Duration]) -> Duration { values.sorted()[values.count / 2] }

func format(_ duration: Duration) -> String {
    let ms = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    return ms < 1 ? String(format: "%.1f µs", ms * 1000) : String(format: "%.1f ms", ms)
}

@MainActor
func benchmark() throws {
    let items = makeItems(itemCount)
    let snapshot = Snapshot(
        items: items,
        navigation: [Navigation(clientID: "tablet", state: .root, version: 1, updatedAt: epochDate)],
        cursor: FeedCursor(epoch: "be", seq: 0))
    let snapshotJSON = try JSONCoding.encoder().encode(snapshot)
    let changes = makeChanges(items: items)
    let changesJSON = try changes.map { try JSONCoding.encoder().encode($0) }

    var coldStart: [Duration] = []
    var coldDecode: [Duration] = []
    var applyIdle: [Duration] = []
    var applyPending: [Duration] = []
    var decodeChanges: [Duration] = []
    var optimisticMemory: [Duration] = []
    var optimisticFile: [Duration] = []
    var applyReading: [Duration] = []
    let clock = ContinuousClock()
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("clientbench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }

    for run in 0..<runs {
        // 2. Cold start: decode the snapshot's JSON as it comes off the wire, load it, read the sorted items.
        var store: SyncedStore!
        var decoded: Snapshot!
        coldStart.append(
            try clock.measure {
                decoded = try JSONCoding.decoder().decode(Snapshot.self, from: snapshotJSON)
                store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
                store.apply(.snapshot(decoded))
                precondition(store.items.count == itemCount)
            })
        coldDecode.append(try clock.measure { _ = try JSONCoding.decoder().decode(Snapshot.self, from: snapshotJSON) })

        // 1. 10,000 changes applied, nothing pending (the common case) ...
        applyIdle.append(clock.measure { for change in changes { store.apply(.change(change)) } })
        precondition(store.itemsByID.count == itemCount + changeCount / 10 - changeCount / 20)
        _ = store.items

        // ... and with a command pending (an open edit with a typed draft), which replays on every change.
        let pending = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        pending.apply(.snapshot(decoded))
        try pending.send(.openEdit(itemID: items[1].id))
        try pending.editDraft { $0.name = "Typed offline" }
        applyPending.append(clock.measure { for change in changes { pending.apply(.change(change)) } })
        precondition(pending.draft?.name == "Typed offline")

        // 4. The same changes with `items` read after each, as a list on screen does.
        let reading = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
        reading.apply(.snapshot(decoded))
        _ = reading.items
        applyReading.append(
            clock.measure {
                for change in changes {
                    reading.apply(.change(change))
                    _ = reading.items
                }
            })

        // The same changes decoded from their JSON, as the SSE reader does (informative).
        let decoder = JSONCoding.decoder()
        decodeChanges.append(try clock.measure { for json in changesJSON { _ = try decoder.decode(Change.self, from: json) } })

        // 3. Optimistic: the edit is open when send returns; no server exists to answer it.
        let target = items[run].id
        optimisticMemory.append(
            try clock.measure {
                try store.send(.openEdit(itemID: target))
                precondition(store.navigation.state.destination?.itemID == target)
            })
        let fileStore = try SyncedStore(client: nowhere, clientID: "phone", queuePath: folder.appendingPathComponent("queue-\(run).sqlite").path)
        fileStore.apply(.snapshot(decoded))
        optimisticFile.append(
            try clock.measure {
                try fileStore.send(.openEdit(itemID: target))
                precondition(fileStore.navigation.state.destination?.itemID == target)
            })
    }

    print("ClientBench: \(itemCount) items, \(changeCount) changes, median of \(runs) runs")
    print("  apply 10,000 feed changes, nothing pending:       \(format(median(applyIdle)))   (target <= 100 ms)")
    print("  apply 10,000 feed changes, one edit pending:      \(format(median(applyPending)))")
    print("  apply 10,000 feed changes, items read after each: \(format(median(applyReading)))")
    print("  cold start from a 10,000-item snapshot (decode + load + sorted items): \(format(median(coldStart)))   (target <= 1 s)")
    print("    of which decoding the snapshot's JSON:          \(format(median(coldDecode)))")
    print("  decode 10,000 changes from their JSON (SSE data): \(format(median(decodeChanges)))")
    print("  optimistic openEdit visible when send returns, in-memory queue: \(format(median(optimisticMemory)))")
    print("  optimistic openEdit visible when send returns, SQLite queue:    \(format(median(optimisticFile)))   (no server: no round trip)")
}

/// 5. `count` commands queued while the store is stopped (an open add, its draft typed, its save),
/// then delivered to the server at `url`: the time from `start()` until the server has answered all.
@MainActor
func drain(url: URL, token: String, count: Int) async throws -> Duration {
    let client = StockroomClient(baseURL: url, token: token)
    let clientID = ClientID("drain-\(UUID().uuidString.prefix(8))")!
    let store = try SyncedStore(client: client, clientID: clientID, queue: .inMemory())
    try store.send(.openAdd)
    for index in 1..<(count - 1) { try store.editDraft { $0.name = "Draft \(index)" } }
    try store.send(.save())
    let clock = ContinuousClock()
    let start = clock.now
    store.start()
    defer { store.stop() }
    await store.waitUntilDelivered()
    let elapsed = clock.now - start
    precondition(store.pendingWrites.isEmpty && store.failedWrites.isEmpty, "every command applied")
    return elapsed
}

/// 5b. The feed from the beginning of the log until `count` changes: changes per second, read by a
/// `ChangeFeed` (decoded) and, with `store`, applied to a `SyncedStore` as the app's copy: each
/// change through `apply(_:)`, or each batch the feed hands over through `apply(contentsOf:)` (what
/// the store does with its own feed).
enum CatchUpReader { case feed, storeEach, storeBatches }

@MainActor
func catchUp(url: URL, token: String, count: Int, reader: CatchUpReader) async throws -> Double {
    let client = StockroomClient(baseURL: url, token: token)
    let synced = reader == .feed ? nil : try SyncedStore(client: client, clientID: "catchup", queue: .inMemory())
    synced?.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "", seq: 0))))
    let clock = ContinuousClock()
    let start = clock.now
    var seen = 0
    var events = client.feed(from: .beginning, options: FeedOptions(topics: [.items])).makeAsyncIterator()
    if reader == .storeBatches, let synced {
        // As an app follows its feed: each batch applied whole, no event looked at here (looking
        // copies each event, a retain and a release of each of its references). A catch-up of a
        // fresh log from its beginning is item creates, so the store holds `count` items once
        // `count` changes came (a few more may come in the last batch).
        while synced.itemsByID.count < count, let batch = try await events.nextBatch() {
            synced.apply(contentsOf: batch)
            precondition(synced.resyncCount == 0, "the server's log was trimmed: it no longer starts at the beginning")
        }
        precondition(synced.itemsByID.count >= count)
    } else {
        while seen < count, let event = try await events.next(isolation: #isolation) {
            refuseResync(event)
            // Every event, as an app that follows the feed itself passes them: `.connected(head:)`
            // tells the store how long the catch-up is, which it grows its items for.
            synced?.apply(event)
            guard case .change = event else { continue }
            seen += 1
        }
    }
    let elapsed = clock.now - start
    return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// The process's CPU time so far and its peak resident size (`getrusage`): what a catch-up cost
/// the reader, its system time mostly the page faults of the memory the store grows into.
struct ReaderUsage {
    var user: Double
    var system: Double
    var peakMegabytes: Int

    static func now() -> ReaderUsage {
        var usage = rusage()
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        #if os(Linux)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
            let peak = Int(usage.ru_maxrss) / 1024  // kilobytes on Linux
        #else
            getrusage(RUSAGE_SELF, &usage)
            let peak = Int(usage.ru_maxrss) / (1024 * 1024)  // bytes on Darwin
        #endif
        return ReaderUsage(user: seconds(usage.ru_utime), system: seconds(usage.ru_stime), peakMegabytes: peak)
    }

    /// What was spent since `before`, as catchup.sh prints it.
    func line(since before: ReaderUsage) -> String {
        String(format: "reader cpu: user %.2f s, system %.2f s, peak RSS %d MB", user - before.user, system - before.system, peakMegabytes)
    }
}

/// A catch-up from the beginning of a log trimmed meanwhile would wait for its changes for ever.
func refuseResync(_ event: FeedEvent) {
    if case .resync = event { fatalError("the server's log was trimmed: it no longer starts at the beginning") }
}

/// 6. APPLY_NEW=N: N new items' upserts applied to an empty store in batches of 4,096 events
/// (`apply(contentsOf:)`), as a catch-up from the beginning of the log hands them over, after a
/// `.connected(head:)` that tells the store how many are coming; no server, no decoding. Under
/// callgrind (`--toggle-collect` on `apply(contentsOf:)`, see Benchmarks/README) it counts the
/// instructions the store spends per item of a catch-up. The longest batch is the longest the
/// main actor was held at once: while it is held, a feed's reader waits.
@MainActor func applyNew(_ count: Int) throws -> (all: Duration, longest: Duration) {
    let store = try SyncedStore(client: nowhere, clientID: "phone", queue: .inMemory())
    store.apply(.snapshot(Snapshot(items: [], navigation: [], cursor: FeedCursor(epoch: "be", seq: 0))))
    var events: [FeedEvent] = [.connected(head: FeedCursor(epoch: "be", seq: Int64(count)))]
    for index in 0..<count {
        let item = Item(
            id: .random(), name: "catch-up item \(index)", color: nil, status: .outOfStock(isOnBackOrder: true), version: 1,
            createdAt: epochDate, updatedAt: epochDate)
        let change = Change(
            seq: index + 1, cursor: FeedCursor(epoch: "be", seq: Int64(index + 1)), entity: .item, operation: .upsert,
            id: item.id.description, value: .item(item), origin: .init(clientID: nil, idempotencyKey: nil), at: epochDate)
        events.append(.change(change))
    }
    let clock = ContinuousClock()
    var longest = Duration.zero
    let elapsed = clock.measure {
        var start = 0
        while start < events.count {
            let end = min(start + 4096, events.count)
            let batch = clock.measure { store.apply(contentsOf: events[start..<end]) }
            longest = max(longest, batch)
            start = end
        }
    }
    precondition(store.itemsByID.count == count)
    return (elapsed, longest)
}
let environment = ProcessInfo.processInfo.environment
if let count = environment["APPLY_NEW"].flatMap(Int.init) {
    let (elapsed, longest) = try await MainActor.run { try applyNew(count) }
    print("  apply \(count) new items in batches: \(format(elapsed)), the longest batch \(format(longest))")
    exit(0)
}
let catchUpOnly = environment["CATCHUP_ONLY"]
if catchUpOnly == nil { try await MainActor.run { try benchmark() } }
if let url = environment["STOCKROOM_URL"].flatMap(URL.init(string:)), let token = environment["STOCKROOM_TOKEN"],
    let count = environment["CATCHUP"].flatMap(Int.init)
{
    for (reader, name) in [(CatchUpReader.feed, "ChangeFeed"), (.storeEach, "SyncedStore applying each"), (.storeBatches, "SyncedStore applying each batch")]
    where catchUpOnly == nil || catchUpOnly == name {
        let before = ReaderUsage.now()
        let rate = try await catchUp(url: url, token: token, count: count, reader: reader)
        let usage = ReaderUsage.now().line(since: before)
        print("  catch-up of \(count) changes, \(name): \(Int(rate)) changes/s")
        print("  \(usage)")
    }
} else if let url = environment["STOCKROOM_URL"].flatMap(URL.init(string:)), let token = environment["STOCKROOM_TOKEN"] {
    let count = Int(environment["DRAIN"] ?? "") ?? 10_000
    let elapsed = try await drain(url: url, token: token, count: count)
    print("  drain \(count) commands queued offline to \(url): \(format(elapsed)) (\(Int(Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))) commands/s)")
}
