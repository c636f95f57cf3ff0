// The store's operations that issue #8 asks instruction and allocation counts of, each on the public
// API the server calls per request, on a real SQLite file (WAL, synchronous=FULL as the server's
// default) in a temporary folder. StoreBenchmarks (package-benchmark) and StoreCounts (callgrind)
// run the same functions, so their figures are of the same work.
import Foundation
import Synchronization
import StockroomCore
import StockroomStorage
import StockroomStore
import StockroomWire

/// A fresh database with a few items, an editor token, and counters that make each write a change.
public final class StoreFixture: Sendable {
    /// The store, opened as the server opens it.
    public let database: AppDatabase
    /// The temporary folder that holds the database file.
    public let directory: URL
    /// The items the operations write; one per writer (the save cycle's own, the PUT's own).
    public let putItem: ItemID
    /// The item the save cycle edits.
    public let editItem: ItemID
    /// A live editor token's secret.
    public let secret: String
    /// The token's user.
    public let user: UserID
    /// The device whose navigation the save cycle changes.
    public let clientID: ClientID
    let counter = Counter()

    /// Opens a new database in a temporary folder and fills it.
    public init(items: Int = 100) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-bench-\(UUID().uuidString)")
        database = try AppDatabase.open(path: directory.appendingPathComponent("bench.sqlite").path)
        user = "bench"
        clientID = "bench-phone"
        let origin = Origin(user: user)
        var ids: [ItemID] = []
        for index in 0..<max(items, 2) {
            let draft = Draft(name: "Item \(index)", color: Self.red, status: .inStock(quantity: index))
            ids.append(try await database.createItem(id: nil, draft: draft, origin: origin).value.id)
        }
        putItem = ids[0]
        editItem = ids[1]
        secret = try await database.createToken(user: user, role: .editor).secret
        Self.created.withLock { $0.append(directory) }
    }

    /// Removes the folders of every fixture made so far (their databases may still be open: SQLite
    /// keeps working on unlinked files).
    public static func removeAll() {
        for directory in created.withLock({ $0 }) { try? FileManager.default.removeItem(at: directory) }
    }

    private static let created = Mutex<[URL]>([])

    static let red = Color(name: "Red", red: 1, green: 0, blue: 0)

    /// A valid Draft that differs from the last one, so that every write changes the item.
    func nextDraft(_ name: String) -> Draft {
        Draft(name: name, color: Self.red, status: .inStock(quantity: counter.next()))
    }

    // MARK: - The operations

    /// The store's write path of `PUT /v1/items/{id}`: one `updateItem` (one group commit, one fsync).
    public func updateItem() async throws {
        _ = try await database.updateItem(putItem, draft: nextDraft("PUT item"), precondition: nil, origin: Origin(user: user, clientID: nil))
    }

    /// One edit of a draft through commands: `openEdit`, `updateDraft`, `save` (three transactions).
    public func saveCycle() async throws {
        let origin = Origin(user: user, clientID: clientID)
        _ = try await database.runCommand(.openEdit(itemID: editItem), clientID: clientID, origin: origin)
        _ = try await database.runCommand(.updateDraft(draft: nextDraft("Edited item")), clientID: clientID, origin: origin)
        let saved = try await database.runCommand(.save(), clientID: clientID, origin: origin).value
        guard saved.item != nil else { throw OperationError("save wrote no item") }
    }

    /// The token check of every request: the secret's hash, the token generation, the verified-token cache.
    public func authenticate() async throws {
        guard try await database.authenticate(secret: secret) != nil else { throw OperationError("token refused") }
    }
}

/// A daemon's presence service, once a second (`Storage.recordPresence`): the tick of a second in
/// which `devices` devices each sent a request, their sightings written and nothing published.
public struct PresenceTicks: Sendable {
    let database: AppDatabase
    let user: UserID
    let devices: [ClientID]

    /// Ticks of `devices` devices of the fixture's user.
    public init(_ fixture: StoreFixture, devices: Int) {
        database = fixture.database
        user = fixture.user
        self.devices = (0..<devices).map { ClientID(stored: "bench-device-\($0)") }
    }

    /// One tick: every device seen now.
    public func tick() async throws {
        let now = Date()
        var seen: [ClientID: PresenceTick.Sighting] = [:]
        seen.reserveCapacity(devices.count)
        for device in devices { seen[device] = PresenceTick.Sighting(user: user, at: now) }
        _ = try await database.recordPresence(PresenceTick(daemon: "bench", now: now, leaseUntil: now.addingTimeInterval(30), seen: seen))
    }
}

/// One change's encoding, as the store does it for every commit: the item's JSON (`JSONWriter`,
/// what `ChangeLog.append` stores) and the `Change` object around it (what the feed sends, once
/// per change, to every transport).
public struct ChangeEncoding: Sendable {
    /// A typical item: a name, a color, a status.
    public let item: Item
    let epoch = "0123456789abcdef"

    /// An item like the demo's.
    public init() {
        let at = Date(timeIntervalSince1970: 1_790_000_000.123)
        item = Item(
            id: ItemID("1b4e28ba-2fa1-11d2-883f-0016d3cca427")!, name: "Mechanical keyboard",
            color: Color(name: "Graphite", red: 0.2, green: 0.2, blue: 0.25), status: .inStock(quantity: 12),
            version: 7, createdAt: at, updatedAt: at.addingTimeInterval(3600))
    }

    /// The item's JSON then the change's; returns the change's size so the work is not optimized away.
    public func encodeChange(seq: Int64) -> Int {
        let value = String(decoding: item.jsonBytes, as: UTF8.self)
        let change = ChangeEntry.json(
            seq: seq, epoch: epoch, entity: .item, op: .upsert, id: item.id.description, valueJSON: value,
            originClientID: "phone", originIdempotencyKey: nil, at: 1_790_000_003_600_123)
        return change.utf8.count
    }

    /// The item's JSON through `JSONEncoder` (Codable), which the hot paths replaced: for comparison.
    public func encodeItemWithJSONEncoder() throws -> Int {
        try JSONCoding.encoder().encode(item).count
    }
}

/// A feed fan-out: `subscribers` feed subscribers (items topic) that each do what a feed transport
/// does on a commit: wake, read the changes past their cursor (from the hub's memory), and take each
/// change's JSON. `commitAndDeliver` is one `updateItem` plus its delivery to every subscriber.
public final class FanOut: Sendable {
    let fixture: StoreFixture
    let subscribers: Int
    let tasks: [Task<Void, Never>]
    let deliveries: AsyncStream<Int64>
    let iterator: IteratorBox

    /// Registers the subscribers and starts their loops.
    public init(_ fixture: StoreFixture, subscribers: Int) {
        self.fixture = fixture
        self.subscribers = subscribers
        let (deliveries, continuation) = AsyncStream<Int64>.makeStream()
        self.deliveries = deliveries
        iterator = IteratorBox(deliveries.makeAsyncIterator())
        let database = fixture.database
        let filter = FeedFilter(user: fixture.user, topics: [.item])
        tasks = (0..<subscribers).map { _ in
            // Subscribed before the head is read, as the feed does, so no commit slips between.
            let subscription = database.hub.subscribe(filter)
            let start = database.hub.head
            return Task {
                var cursor = start
                defer { subscription.cancel() }
                while !Task.isCancelled {
                    guard await subscription.wait(timeout: .seconds(3600)) else {
                        if subscription.isClosed { return }
                        continue
                    }
                    guard let page = try? await database.readChanges(after: cursor, filter: filter, limit: 100) else { return }
                    var bytes = 0
                    for change in page.changes { bytes += change.json.utf8.count }
                    cursor = page.cursor.seq
                    if bytes > 0 { continuation.yield(cursor) }
                }
            }
        }
    }

    /// One commit, delivered to every subscriber.
    public func commitAndDeliver() async throws {
        try await fixture.updateItem()
        for _ in 0..<subscribers {
            guard await iterator.next() != nil else { throw OperationError("a subscriber ended") }
        }
    }

    /// Ends the subscribers.
    public func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}

/// The delivery stream's iterator, used by one task at a time (the benchmark's loop).
final class IteratorBox: @unchecked Sendable {
    // Unchecked: only `commitAndDeliver` touches it, and the benchmark loop calls that serially.
    var iterator: AsyncStream<Int64>.Iterator

    init(_ iterator: AsyncStream<Int64>.Iterator) {
        self.iterator = iterator
    }

    func next() async -> Int64? {
        await iterator.next()
    }
}

/// A counter for the drafts, so that every write changes the item.
final class Counter: Sendable {
    private let value = Mutex(0)

    func next() -> Int {
        value.withLock { value in
            value += 1
            return value
        }
    }
}

/// An operation did not do what it should have: the figures would be of something else.
public struct OperationError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
