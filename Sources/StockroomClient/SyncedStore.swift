import Foundation
import Observation

/// A live, observable copy of what one device of a user sees: every item, this device's navigation,
/// the user's other devices, the writes not yet answered, and the connection.
///
/// Every write is applied at once, optimistically: commands with the same `Transition.decide` the
/// server runs, item writes (``createItem(_:id:)``, ``updateItem(_:with:)``, ``deleteItem(_:)``) as
/// the server would apply them. Each is written to the offline ``WriteQueue`` and delivered in
/// order. The server's answer or the feed's echo of the write (recognised by its idempotency key)
/// reconciles: the server's version wins, and a refused write rolls back, with its error in
/// ``failedWrites``. Offline, writes wait in the queue (which survives the app being killed) and
/// are delivered once the server answers again, each applied once.
///
/// ```swift
/// let store = try SyncedStore(client: client, clientID: "phone", queuePath: path)
/// store.start()
/// try store.send(.openEdit(itemID: item.id))
/// try store.editDraft { $0.name = "Desk Lamp" }
/// try store.send(.save())
/// ```
@MainActor
@Observable
public final class SyncedStore {
    /// Every item as this device should show it: the server's, with pending commands applied.
    public internal(set) var itemsByID = ItemsByID()
    /// This device's navigation, with pending commands applied; its `version` is the server's.
    public internal(set) var navigation: Navigation
    /// The user's other devices, most recently changed first.
    public internal(set) var otherDevices: [Navigation] = []
    /// Whether each of the user's devices is open now and when it was last seen, as the server
    /// last said (`GET /v1/users/me/navigation` after each snapshot, then the feed's `presence` changes).
    public internal(set) var presence: [ClientID: Presence] = [:]
    /// Writes (commands and item writes) queued but not yet answered by the server, oldest first.
    public internal(set) var pendingWrites: [QueuedWrite] = []
    /// Writes the server refused, or that ran out of attempts, oldest first, until dismissed.
    public internal(set) var failedWrites: [WriteFailure] = []
    /// The connection to the server.
    public internal(set) var connection: ConnectionState = .idle
    /// How many times the server could not continue the feed (`410`) and the store was reloaded from a snapshot.
    public internal(set) var resyncCount = 0
    /// The feed position the store has applied.
    public internal(set) var cursor: FeedCursor?
    /// Whether a first snapshot has been loaded (before it, only queued commands show).
    public internal(set) var isLoaded = false
    /// The items the store follows (`FeedOptions.filter` at first; ``setFilter(_:)``); nil for every item.
    public internal(set) var filter: ItemFilter?

    /// This device.
    public let clientID: ClientID
    /// The client the store talks through.
    @ObservationIgnored public let client: StockroomClient
    @ObservationIgnored let queue: WriteQueue
    @ObservationIgnored let options: Options

    // The server's items as last heard (answers and feed) are not a second dictionary: an item no
    // pending write overlays shows as the server has it, and `itemsByID` holds it once. Only what
    // differs is kept, in the two below; `confirmedItem(_:)` reads them before `itemsByID`.

    /// The server's item (nil: none) beneath each id a pending write overlaid at the last `publish`.
    @ObservationIgnored var confirmedBeneath: [ItemID: Item?] = [:]
    /// The server's items that changed since the last `publish` (nil: gone), for the next to show.
    @ObservationIgnored var unshown: [ItemID: Item?] = [:]
    @ObservationIgnored var confirmedNavigation: Navigation
    @ObservationIgnored var otherDevicesByID: [ClientID: Navigation] = [:]
    /// Items deleted on the server since the last snapshot: ids are never reused, so a late upsert
    /// (an answer overtaken by the feed's delete) must not bring one back.
    @ObservationIgnored var tombstones: Set<ItemID> = []
    /// Items the feed took out of the store's filter: an answer does not bring one back (the feed does).
    @ObservationIgnored var departed: Set<ItemID> = []
    /// Arrival order, to break ties of `createdAt`; placeholders of pending inserts come last.
    /// Only what `items` has needed is in it: later arrivals wait in `unindexedArrivals`.
    @ObservationIgnored var arrival: [ItemID: Int] = [:]
    /// The ids that arrived after those `arrival` holds, in order (numbered up to `nextArrival`).
    @ObservationIgnored var unindexedArrivals: [ItemID] = []
    @ObservationIgnored var nextArrival = 0
    @ObservationIgnored var sortedItems: [Item]?
    /// The log's head when the feed's stream opened (`FeedEvent.connected`): the end of its catch-up.
    @ObservationIgnored var catchUpHead: FeedCursor?

    /// Pending commands as applied on top of the confirmed state.
    @ObservationIgnored var optimistic: [Optimistic] = []
    /// The state after replaying `optimistic`, so that a new command applies on top without a replay.
    @ObservationIgnored var replayedState = NavigationState.root
    @ObservationIgnored var replayedOverlay: [ItemID: Item?] = [:]
    /// Answers and echoes of this device's own commands since the last rebase (`rebaseSoon`).
    @ObservationIgnored var deferredRebases = 0
    /// How many times a pending command has been replayed (for tests: a drain is linear).
    @ObservationIgnored var replayCount = 0
    /// How many times `items` was sorted whole (for tests: a change moves one item).
    @ObservationIgnored var itemSorts = 0
    /// The key each item of `sortedItems` was placed by, by id and in the same order.
    @ObservationIgnored var sortKeys: [ItemID: SortKey] = [:]
    @ObservationIgnored var sortedItemKeys: [SortKey] = []
    /// Whether `items` was read since the last item change (`show`).
    @ObservationIgnored var itemsReadSinceChange = false

    @ObservationIgnored let tasks = TaskBag()
    @ObservationIgnored let wakeup = Wakeup()
    @ObservationIgnored var waiters: [QueuedWrite.ID: [AnswerWaiter]] = [:]
    @ObservationIgnored var deliveryAttempt = 0
    /// Server errors answered to the command at the head of the queue (`Options.serverErrorAttempts`).
    @ObservationIgnored var serverErrors = 0
    @ObservationIgnored var loadWaiters: [LoadWaiter] = []
    /// Names each waiter, so that a cancelled one is found again.
    @ObservationIgnored var nextWaiterToken = 0
    /// `stop()` was called and `start()` not since: nothing is delivered, so no answer comes.
    @ObservationIgnored var stopped = false
    /// The task following the feed (also in `tasks`), replaced when the filter changes.
    @ObservationIgnored var feedTask: Task<Void, Never>?

    /// A store for device `clientID` talking through `client`, queueing commands in `queue`. Commands
    /// still in the queue from an earlier run are applied optimistically at once and delivered after `start()`.
    public init(client: StockroomClient, clientID: ClientID, queue: WriteQueue, options: Options = Options()) throws {
        self.client = client
        self.clientID = clientID
        self.queue = queue
        self.options = options
        filter = options.feed.filter
        confirmedNavigation = .unwritten(clientID: clientID)
        navigation = .unwritten(clientID: clientID)
        let pending = try queue.pending(for: clientID)
        pendingWrites = pending
        optimistic = pending.map(Optimistic.init)
        rebase()
    }

    /// A store whose offline queue is the SQLite file at `queuePath` (created if missing).
    public convenience init(client: StockroomClient, clientID: ClientID, queuePath: String, options: Options = Options()) throws {
        try self.init(client: client, clientID: clientID, queue: WriteQueue(path: queuePath), options: options)
    }

    deinit {
        tasks.cancelAll()
    }

    // MARK: - Reading

    /// Every item in creation order, as this device should show it.
    public var items: [Item] {
        itemsReadSinceChange = true
        if let sortedItems {
            access(keyPath: \.itemsByID)
            return sortedItems
        }
        itemSorts += 1
        let keyed = itemsByID.values.map { (sortKey($0), $0) }.sorted { $0.0 < $1.0 }
        sortKeys = Dictionary(keyed.map { ($1.id, $0) }, uniquingKeysWith: { $1 })
        sortedItemKeys = keyed.map(\.0)
        let sorted = keyed.map(\.1)
        sortedItems = sorted
        return sorted
    }

    /// Changes `itemsByID` in place, as one mutation for its observers.
    func changeShownItems(_ body: (inout ItemsByID) -> Void) {
        body(&itemsByID)
    }

    /// Changes `itemsByID` in place and tells its observers once, after, if `body` says it changed.
    func changeShownItemsIfAny(_ body: (inout ItemsByID) -> Bool) {
        if body(&_itemsByID) { withMutation(keyPath: \.itemsByID) {} }
    }

    /// `itemsByID` as stored, for the store's own look-ups: read without telling observers.
    var shownItems: ItemsByID { _itemsByID }

    /// The draft of this device's open add, edit or duplicate, if one is open.
    public var draft: Draft? { navigation.state.destination?.draft }

    /// The alert or confirmation dialog this device shows, if one is open (a delete alert, a
    /// conflict): its title, message and buttons, for SwiftUI's `.alert` or a `UIAlertController`.
    /// A tap on a button is `press(_:)`; Escape or a tap outside is `send(.cancel)`.
    public var alert: AlertState? { navigation.state.destination?.alert }

    /// Sends the command a button of the open alert carries, as a tap on it does.
    @discardableResult
    public func press(_ button: ButtonState) throws -> QueuedWrite {
        try send(button.command)
    }

    /// Another device of this user, if it has written its navigation.
    public func device(_ id: ClientID) -> Navigation? {
        access(keyPath: \.otherDevices)
        return otherDevicesByID[id]
    }

    // MARK: - Running

    /// Takes a snapshot, follows the feed, and delivers queued commands, until `stop()`.
    public func start() {
        guard tasks.isEmpty else { return }
        stopped = false
        connection = .connecting
        follow(from: .snapshot)
        // The delivery loop holds the store only while it delivers, not while it waits.
        let wakeup = self.wakeup
        tasks.add(
            Task { [weak self] in
                while !Task.isCancelled {
                    guard let step = await self?.deliverNext() else { return }
                    switch step {
                    case .delivered:
                        continue
                    case .idle:
                        await wakeup.wait()
                    case .retry(let delay):
                        await wakeup.wait(timeout: delay)
                    case .stop:
                        return
                    }
                }
            })
    }

    /// Stops following the feed and delivering commands; queued commands stay in the queue. Callers
    /// waiting in `perform` get `CancellationError`; `waitUntilLoaded` and `waitUntilDelivered` return.
    /// Until `start()` again, so do those called after it (a command `perform` queues stays queued).
    public func stop() {
        stopped = true
        tasks.cancelAll()
        flushRebase()
        feedTask = nil
        connection = .idle
        let waiting = waiters.values.flatMap { $0 }
        waiters = [:]
        for waiter in waiting { waiter.continuation.resume(throwing: CancellationError()) }
        let loading = loadWaiters
        loadWaiters = []
        for waiter in loading { waiter.continuation.resume() }
    }

    // MARK: - Commands

    /// Applies `command` to this device at once (optimistically) and queues it for the server.
    /// The optimistic state is visible when this returns; the server's answer reconciles it later.
    /// Throws only when the queue cannot be written.
    @discardableResult
    public func send(_ command: Command) throws -> QueuedWrite {
        try enqueue(.command(command))
    }

    /// Queues `write`, applies it on top of the state shown (no replay of the others), and wakes delivery.
    func enqueue(_ write: Write) throws -> QueuedWrite {
        let queued = try queue.enqueue(write, for: clientID)
        pendingWrites.append(queued)
        optimistic.append(Optimistic(queued))
        var state = replayedState
        var overlay = replayedOverlay
        replay(at: optimistic.count - 1, state: &state, overlay: &overlay)
        publish(state: state, overlay: overlay)
        wakeup.fire()
        return queued
    }

    /// Sends `command` like `send(_:)` and waits for the server's answer: its result, or the
    /// `StockroomError` it was refused with. While offline it waits until the server answers. When
    /// the calling task is cancelled, or the store is stopped, it throws `CancellationError` and the
    /// command stays queued.
    @discardableResult
    public func perform(_ command: Command) async throws -> CommandResult {
        let queued = try send(command)
        guard case .command(let result) = try await answer(to: queued) else { preconditionFailure("a command is answered with a command's result") }
        return result
    }

    /// Waits for the server's answer to `queued`, or the error it was refused with; `CancellationError`
    /// when the calling task is cancelled or the store is stopped.
    func answer(to queued: QueuedWrite) async throws -> WriteAnswer {
        if stopped { throw CancellationError() }
        let token = takeWaiterToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                waiters[queued.id, default: []].append(AnswerWaiter(token: token, continuation: continuation))
            }
        } onCancel: {
            Task { @MainActor [weak self] in self?.cancelAnswerWaiter(queued.id, token: token) }
        }
    }

    private func cancelAnswerWaiter(_ id: QueuedWrite.ID, token: Int) {
        guard var waiting = waiters[id], let index = waiting.firstIndex(where: { $0.token == token }) else { return }
        let waiter = waiting.remove(at: index)
        waiters[id] = waiting.isEmpty ? nil : waiting
        waiter.continuation.resume(throwing: CancellationError())
    }

    private func takeWaiterToken() -> Int {
        defer { nextWaiterToken += 1 }
        return nextWaiterToken
    }

    /// Waits until the first snapshot is loaded (at once if it is), the store is stopped or the
    /// calling task is cancelled; while the server cannot be reached that is until it can.
    public func waitUntilLoaded() async {
        guard !isLoaded, !stopped else { return }
        let token = takeWaiterToken()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume() }
                loadWaiters.append(LoadWaiter(token: token, continuation: continuation))
            }
        } onCancel: {
            Task { @MainActor [weak self] in self?.cancelLoadWaiter(token: token) }
        }
    }

    private func cancelLoadWaiter(token: Int) {
        guard let index = loadWaiters.firstIndex(where: { $0.token == token }) else { return }
        loadWaiters.remove(at: index).continuation.resume()
    }

    /// Waits until every write queued so far has been answered by the server (applied or refused),
    /// the store is stopped or the calling task is cancelled.
    public func waitUntilDelivered() async {
        guard let last = pendingWrites.last else { return }
        _ = try? await answer(to: last)
    }

    /// Changes the open draft (`updateDraft`); does nothing when no add, edit or duplicate is open.
    @discardableResult
    public func editDraft(_ change: (inout Draft) -> Void) throws -> QueuedWrite? {
        guard var draft else { return nil }
        change(&draft)
        return try send(.updateDraft(draft: draft))
    }

    /// Continues here where another device of this user is: copies its tab, path and open
    /// screen, draft included (the `restore` command). The handoff.
    @discardableResult
    public func `continue`(from device: ClientID) throws -> QueuedWrite {
        try send(.restore(fromClientID: device))
    }

    /// Forgets a failed write once the app has shown it.
    public func dismissFailedWrite(_ id: WriteFailure.ID) {
        failedWrites.removeAll { $0.id == id }
    }
}

/// A caller waiting in one of the store's waits, by the token its cancellation finds it with.
struct Waiter<Value, Failure: Error> {
    let token: Int
    let continuation: CheckedContinuation<Value, Failure>
}

/// A caller waiting for a write's answer (`SyncedStore.answer(to:)`).
typealias AnswerWaiter = Waiter<WriteAnswer, any Error>

/// A caller waiting for the first snapshot (`SyncedStore.waitUntilLoaded()`).
typealias LoadWaiter = Waiter<Void, Never>
