import Foundation
import Observation

/// A live, observable copy of what one device of a user sees: every item, this device's navigation,
/// the user's other devices, the commands not yet answered, and the connection.
///
/// Commands are applied at once, optimistically, with the same `Transition.decide` the server runs,
/// written to the offline ``CommandQueue`` and delivered in order. The server's answer or the
/// feed's echo of the command (recognised by its origin: this device and the command's
/// idempotency key) reconciles: the server's version wins, and a refused command rolls back, with
/// its error in ``failures``. Offline, commands wait in the queue (which survives the app being
/// killed) and are delivered once the server answers again, each applied once.
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
    public private(set) var itemsByID: [ItemID: Item] = [:]
    /// This device's navigation, with pending commands applied; its `version` is the server's.
    public private(set) var navigation: Navigation
    /// The user's other devices, most recently changed first.
    public private(set) var otherDevices: [Navigation] = []
    /// Whether each of the user's devices is open now and when it was last seen, as the server
    /// last said (`GET /v1/users/me/navigation` after each snapshot, then the feed's `presence` changes).
    public private(set) var presence: [ClientID: Presence] = [:]
    /// Commands sent but not yet answered by the server, oldest first.
    public private(set) var pendingCommands: [QueuedCommand] = []
    /// Commands the server refused, oldest first, until dismissed.
    public private(set) var failures: [CommandFailure] = []
    /// The connection to the server.
    public private(set) var connection: ConnectionState = .idle
    /// How many times the server could not continue the feed (`410`) and the store was reloaded from a snapshot.
    public private(set) var resyncCount = 0
    /// The feed position the store has applied.
    public private(set) var cursor: FeedCursor?
    /// Whether a first snapshot has been loaded (before it, only queued commands show).
    public private(set) var isLoaded = false

    /// This device.
    public let clientID: ClientID
    /// The client the store talks through.
    @ObservationIgnored public let client: StockroomClient
    @ObservationIgnored private let queue: CommandQueue
    @ObservationIgnored private let options: Options

    /// The server's state as last heard (answers and feed), before pending commands.
    @ObservationIgnored private var confirmedItems: [ItemID: Item] = [:]
    @ObservationIgnored private var confirmedNavigation: Navigation
    @ObservationIgnored private var otherDevicesByID: [ClientID: Navigation] = [:]
    /// Items deleted on the server since the last snapshot: ids are never reused, so a late upsert
    /// (an answer overtaken by the feed's delete) must not bring one back.
    @ObservationIgnored private var tombstones: Set<ItemID> = []
    /// Arrival order, to break ties of `createdAt`; placeholders of pending inserts come last.
    @ObservationIgnored private var arrival: [ItemID: Int] = [:]
    @ObservationIgnored private var nextArrival = 0
    @ObservationIgnored private var sortedItems: [Item]?

    /// Pending commands as applied on top of the confirmed state.
    @ObservationIgnored private var optimistic: [Optimistic] = []
    /// The state after replaying `optimistic`, so that a new command applies on top without a replay.
    @ObservationIgnored private var replayedState = NavigationState.root
    @ObservationIgnored private var replayedOverlay: [ItemID: Item?] = [:]
    @ObservationIgnored private var overlaidIDs: Set<ItemID> = []
    /// Items whose confirmed value changed since they were last shown.
    @ObservationIgnored private var dirtyIDs: Set<ItemID> = []

    @ObservationIgnored private let tasks = TaskBag()
    @ObservationIgnored private let wakeup = Wakeup()
    @ObservationIgnored private var waiters: [QueuedCommand.ID: [CheckedContinuation<CommandResult, any Error>]] = [:]
    @ObservationIgnored private var deliveryAttempt = 0
    @ObservationIgnored private var loadWaiters: [CheckedContinuation<Void, Never>] = []

    /// How a store connects and retries.
    public struct Options: Sendable {
        /// How the feed follows the server.
        public var feed: FeedOptions
        /// Waits between attempts to deliver a command while the server does not answer.
        public var commandBackoff: Backoff

        /// Creates options.
        public init(feed: FeedOptions = FeedOptions(), commandBackoff: Backoff = Backoff(initial: .milliseconds(250), maximum: .seconds(5))) {
            self.feed = feed
            self.commandBackoff = commandBackoff
        }
    }

    /// A store for device `clientID` talking through `client`, queueing commands in `queue`. Commands
    /// still in the queue from an earlier run are applied optimistically at once and delivered after `start()`.
    public init(client: StockroomClient, clientID: ClientID, queue: CommandQueue, options: Options = Options()) throws {
        self.client = client
        self.clientID = clientID
        self.queue = queue
        self.options = options
        confirmedNavigation = .unwritten(clientID: clientID)
        navigation = .unwritten(clientID: clientID)
        let pending = try queue.pending(for: clientID)
        pendingCommands = pending
        optimistic = pending.map(Optimistic.init)
        rebase()
    }

    /// A store whose offline queue is the SQLite file at `queuePath` (created if missing).
    public convenience init(client: StockroomClient, clientID: ClientID, queuePath: String, options: Options = Options()) throws {
        try self.init(client: client, clientID: clientID, queue: CommandQueue(path: queuePath), options: options)
    }

    deinit {
        tasks.cancelAll()
    }

    // MARK: - Reading

    /// Every item in creation order, as this device should show it.
    public var items: [Item] {
        if let sortedItems {
            access(keyPath: \.itemsByID)
            return sortedItems
        }
        let sorted = itemsByID.values.sorted { lhs, rhs in
            if lhs.createdAt != rhs.createdAt { return lhs.createdAt < rhs.createdAt }
            return (arrival[lhs.id] ?? .max) < (arrival[rhs.id] ?? .max)
        }
        sortedItems = sorted
        return sorted
    }

    /// The draft of this device's open add, edit or duplicate, if one is open.
    public var draft: Draft? { navigation.state.destination?.draft }

    /// The alert or confirmation dialog this device shows, if one is open (a delete alert, a
    /// conflict): its title, message and buttons, for SwiftUI's `.alert` or a `UIAlertController`.
    /// A tap on a button is `press(_:)`; Escape or a tap outside is `send(.cancel)`.
    public var alert: AlertState? { navigation.state.destination?.alert }

    /// Sends the command a button of the open alert carries, as a tap on it does.
    @discardableResult
    public func press(_ button: ButtonState) throws -> QueuedCommand {
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
        connection = .connecting
        var feedOptions = options.feed
        // The store's own stream marks its device online.
        if feedOptions.clientID == nil { feedOptions.clientID = clientID }
        let feed = client.feed(from: .snapshot, options: feedOptions)
        tasks.add(
            Task { [weak self] in
                do {
                    for try await event in feed {
                        guard let self, !Task.isCancelled else { return }
                        self.apply(event)
                    }
                } catch let error as StockroomError {
                    self?.connection = .failed(error)
                } catch {
                    // Cancelled: stopped.
                }
            })
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
    public func stop() {
        tasks.cancelAll()
        connection = .idle
        let waiting = waiters.values.flatMap { $0 }
        waiters = [:]
        for continuation in waiting { continuation.resume(throwing: CancellationError()) }
        let loading = loadWaiters
        loadWaiters = []
        for continuation in loading { continuation.resume() }
    }

    // MARK: - Commands

    /// Applies `command` to this device at once (optimistically) and queues it for the server.
    /// The optimistic state is visible when this returns; the server's answer reconciles it later.
    /// Throws only when the queue cannot be written.
    @discardableResult
    public func send(_ command: Command) throws -> QueuedCommand {
        let queued = try queue.enqueue(command, for: clientID)
        pendingCommands.append(queued)
        optimistic.append(Optimistic(queued))
        // The new command applies on top of the replayed state: no replay of the others.
        var state = replayedState
        var overlay = replayedOverlay
        replay(at: optimistic.count - 1, state: &state, overlay: &overlay)
        publish(state: state, overlay: overlay)
        wakeup.fire()
        return queued
    }

    /// Sends `command` like `send(_:)` and waits for the server's answer: its result, or the
    /// `StockroomError` it was refused with. While offline it waits until the server answers.
    @discardableResult
    public func perform(_ command: Command) async throws -> CommandResult {
        let queued = try send(command)
        return try await withCheckedThrowingContinuation { continuation in
            waiters[queued.id, default: []].append(continuation)
        }
    }

    /// Waits until the first snapshot is loaded (at once if it is), or the store stops; while the
    /// server cannot be reached that is until it can.
    public func waitUntilLoaded() async {
        guard !isLoaded else { return }
        await withCheckedContinuation { loadWaiters.append($0) }
    }

    /// Waits until every command sent so far has been answered by the server (applied or refused).
    public func waitUntilDelivered() async {
        guard let last = pendingCommands.last else { return }
        _ = try? await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CommandResult, any Error>) in
            waiters[last.id, default: []].append(continuation)
        }
    }

    /// Changes the open draft (`updateDraft`); does nothing when no add, edit or duplicate is open.
    @discardableResult
    public func editDraft(_ change: (inout Draft) -> Void) throws -> QueuedCommand? {
        guard var draft else { return nil }
        change(&draft)
        return try send(.updateDraft(draft: draft))
    }

    /// Continues here where another device of this user is: copies its tab, path and open
    /// screen, draft included (the `restore` command). The handoff.
    @discardableResult
    public func `continue`(from device: ClientID) throws -> QueuedCommand {
        try send(.restore(fromClientID: device))
    }

    /// Forgets a refusal once the app has shown it.
    public func dismissFailure(_ id: CommandFailure.ID) {
        failures.removeAll { $0.id == id }
    }

    // MARK: - Applying what the server says

    /// Applies one feed event: what the store does with each event of its own feed, open to apps
    /// that follow the feed themselves.
    public func apply(_ event: FeedEvent) {
        switch event {
        case .snapshot(let snapshot):
            load(snapshot, keepingNewer: true)
            loadPresence()
        case .resync(let snapshot):
            resyncCount += 1
            load(snapshot, keepingNewer: false)
            loadPresence()
        case .change(let change):
            apply(change)
        case .connected:
            connection = .online
            deliveryAttempt = 0
            wakeup.fire()
        case .disconnected(let error, _):
            connection = .offline(reason: Self.describe(error))
        }
    }

    /// Reads the devices' presence once the snapshot is in; a presence change the feed brought
    /// meanwhile is newer and stays.
    private func loadPresence() {
        let client = self.client
        tasks.add(
            Task { [weak self] in
                guard let known = try? await client.devicePresence(), let self, !Task.isCancelled else { return }
                for (id, value) in known where self.presence[id] == nil { self.presence[id] = value }
            })
    }

    /// Replaces the confirmed state with a snapshot, keeping pending commands on top.
    ///
    /// A first snapshot may have been read before answers the store already applied (a command
    /// answered while the snapshot was on its way): with `keepingNewer`, a newer version the store
    /// holds, or a deletion it knows of, stays, so nothing shows older than it was; the feed from the
    /// snapshot's cursor brings the rest. After a `410` the snapshot replaces everything: the database
    /// may have been restored, where versions start again.
    private func load(_ snapshot: Snapshot, keepingNewer: Bool) {
        var items = Dictionary(snapshot.items.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        var ownNavigation = snapshot.navigation.first { $0.clientID == clientID } ?? .unwritten(clientID: clientID)
        var devices = Dictionary(
            snapshot.navigation.filter { $0.clientID != clientID }.map { ($0.clientID, $0) }, uniquingKeysWith: { $1 })
        if keepingNewer {
            for (id, known) in confirmedItems where (items[id]?.version ?? .max) < known.version { items[id] = known }
            for id in tombstones { items.removeValue(forKey: id) }
            if confirmedNavigation.version > ownNavigation.version { ownNavigation = confirmedNavigation }
            for (id, known) in otherDevicesByID where (devices[id]?.version ?? -1) < known.version { devices[id] = known }
        } else {
            tombstones = []
        }
        confirmedItems = items
        arrival = Dictionary(snapshot.items.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { $1 })
        nextArrival = snapshot.items.count
        confirmedNavigation = ownNavigation
        otherDevicesByID = devices
        publishOtherDevices()
        cursor = snapshot.cursor
        itemsByID = confirmedItems
        sortedItems = nil
        overlaidIDs = []
        dirtyIDs = []
        rebase()
        if !isLoaded {
            isLoaded = true
            let waiting = loadWaiters
            loadWaiters = []
            for waiter in waiting { waiter.resume() }
        }
    }

    private func apply(_ change: Change) {
        cursor = change.cursor
        switch (change.entity, change.operation) {
        case (.item, .upsert):
            if let item = change.item { confirm(item) }
        case (.item, .delete):
            if let id = ItemID(change.id) { confirmDeletion(of: id) }
        case (.navigation, .upsert):
            if let navigation = change.navigation { confirm(navigation) }
        case (.navigation, .delete):
            if let id = ClientID(change.id), id != clientID, otherDevicesByID.removeValue(forKey: id) != nil {
                publishOtherDevices()
            }
            if let id = ClientID(change.id) { presence.removeValue(forKey: id) }
        case (.presence, .upsert):
            if let value = change.presence { presence[value.clientID] = value }
        case (.presence, .delete):
            break
        }
        // An echo of one of this device's pending commands: the server applied it. Its own navigation
        // is the last entry of its transaction; until that arrives the command still counts for the
        // navigation, decided on the items it saw before (so that its own item echo cannot turn its
        // save into a conflict), and its item effect is the server's now.
        if change.origin.clientID == clientID, let key = change.origin.idempotencyKey,
            let index = optimistic.firstIndex(where: { $0.queued.idempotencyKey == key })
        {
            if change.entity == .navigation, change.id == clientID.rawValue {
                optimistic.remove(at: index)
            } else if optimistic[index].frozen == nil {
                optimistic[index].frozen = optimistic[index].lookups
            }
        }
        // With nothing pending this shows the server's state; either way the state the next command is
        // decided on (`replayedState`) follows it. (A shortcut for the empty case would leave that
        // state behind: a repair by another device's delete would show, and the next command would
        // be decided on the path from before it.)
        rebase()
    }

    /// Takes the server's item if it is newer than what the store holds; true when it changed.
    @discardableResult
    private func confirm(_ item: Item) -> Bool {
        guard !tombstones.contains(item.id) else { return false }
        if let known = confirmedItems[item.id], known.version >= item.version { return false }
        if confirmedItems[item.id] == nil {
            arrival[item.id] = nextArrival
            nextArrival += 1
        }
        confirmedItems[item.id] = item
        dirtyIDs.insert(item.id)
        return true
    }

    private func confirmDeletion(of id: ItemID) {
        tombstones.insert(id)
        confirmedItems.removeValue(forKey: id)
        dirtyIDs.insert(id)
    }

    /// Takes the server's navigation of a device if it is newer than what the store holds.
    private func confirm(_ navigation: Navigation) {
        if navigation.clientID == clientID {
            if navigation.version >= confirmedNavigation.version { confirmedNavigation = navigation }
        } else if (otherDevicesByID[navigation.clientID]?.version ?? -1) < navigation.version {
            otherDevicesByID[navigation.clientID] = navigation
            publishOtherDevices()
        }
    }

    private func publishOtherDevices() {
        otherDevices = otherDevicesByID.values.sorted {
            ($0.updatedAt ?? .distantPast, $0.clientID.rawValue) > ($1.updatedAt ?? .distantPast, $1.clientID.rawValue)
        }
    }

    private func show(_ id: ItemID, _ item: Item?) {
        guard itemsByID[id] != item else { return }
        itemsByID[id] = item
        sortedItems = nil
    }

    // MARK: - Optimistic replay

    /// A pending command as applied on top of the confirmed state.
    struct Optimistic {
        let queued: QueuedCommand
        /// The id an insert shows under until the server's item arrives.
        let placeholderID = ItemID.random()
        /// The items the last replay decided on.
        var lookups: [ItemID: Item] = [:]
        /// Set at the first echo of the command: the items it was decided on, kept from then on.
        var frozen: [ItemID: Item]?
        /// What the last replay decided, nil when the command does not apply locally.
        var effect: ItemEffect?

        init(_ queued: QueuedCommand) { self.queued = queued }
    }

    /// Replays every pending command on the confirmed state and shows the result.
    private func rebase() {
        var state = confirmedNavigation.state
        var overlay: [ItemID: Item?] = [:]
        for index in optimistic.indices { replay(at: index, state: &state, overlay: &overlay) }
        publish(state: state, overlay: overlay)
    }

    /// Applies pending command `index` to `state`, its item effect to `overlay` (nil for a delete).
    /// A command the local state refuses changes nothing here; the server decides.
    private func replay(at index: Int, state: inout NavigationState, overlay: inout [ItemID: Item?]) {
        let entry = optimistic[index]
        let command = entry.queued.command
        let lookups: [ItemID: Item]
        if let frozen = entry.frozen {
            lookups = frozen
        } else {
            var found: [ItemID: Item] = [:]
            for id in command.itemsToLookUp(in: state) {
                let item: Item? = if let overlaid = overlay[id] { overlaid } else { confirmedItems[id] }
                if let item { found[id] = item }
            }
            lookups = found
            optimistic[index].lookups = found
        }
        var restoreSource: NavigationState?
        if case .restore(let source) = command {
            restoreSource = source == clientID ? state : otherDevicesByID[source]?.state
        }
        guard let transition = try? Transition.decide(command, on: state, items: lookups, restoreSource: restoreSource) else {
            optimistic[index].effect = nil
            return
        }
        state = transition.state
        optimistic[index].effect = transition.effect
        guard entry.frozen == nil else { return }
        let at = entry.queued.enqueuedAt
        switch transition.effect {
        case .none:
            break
        case .insert(let fields):
            overlay[entry.placeholderID] = Item(
                id: entry.placeholderID, name: fields.name, color: fields.color, status: fields.status, version: 1, createdAt: at,
                updatedAt: at)
        case .update(let id, let fields, let expectedVersion):
            overlay[id] = Item(
                id: id, name: fields.name, color: fields.color, status: fields.status, version: expectedVersion + 1,
                createdAt: lookups[id]?.createdAt ?? at, updatedAt: at)
        case .delete(let id):
            overlay[id] = .some(nil)
        }
    }

    /// Shows the replayed state: the confirmed items with `overlay` on top, and the navigation.
    private func publish(state: NavigationState, overlay: [ItemID: Item?]) {
        replayedState = state
        replayedOverlay = overlay
        let shown = Navigation(
            clientID: clientID, state: state, version: confirmedNavigation.version, updatedAt: confirmedNavigation.updatedAt)
        if navigation != shown { navigation = shown }
        for id in overlaidIDs.union(overlay.keys).union(dirtyIDs) {
            let item: Item? = if let overlaid = overlay[id] { overlaid } else { confirmedItems[id] }
            show(id, item)
        }
        overlaidIDs = Set(overlay.keys)
        dirtyIDs.removeAll(keepingCapacity: true)
    }

    // MARK: - Delivery

    enum Step {
        case delivered, idle, stop
        case retry(Duration)
    }

    /// Delivers the oldest queued command: one at a time, in order, each with its own idempotency key.
    private func deliverNext() async -> Step {
        guard let next = pendingCommands.first else { return .idle }
        do {
            let result = try await client.send(next.command, from: clientID, idempotencyKey: next.idempotencyKey)
            answered(next, with: result)
            return .delivered
        } catch let error as StockroomError where error.isRefusal {
            refused(next, with: error)
            return .delivered
        } catch let error as StockroomError where error.code == .unauthorized {
            connection = .failed(error)
            return .stop
        } catch is CancellationError {
            return .stop
        } catch {
            // No answer, or an answer that says "later" (503, 429, 409 requestInProgress): the same
            // command with the same key again, after a while or once the feed is back.
            if !(error is StockroomError) {
                try? queue.recordAttempt(next.id)
                connection = .offline(reason: Self.describe(error))
            }
            deliveryAttempt += 1
            let delay = options.commandBackoff.delay(attempt: deliveryAttempt)
            return .retry(max(delay, (error as? StockroomError)?.retryAfter ?? .zero))
        }
    }

    private func answered(_ queued: QueuedCommand, with result: CommandResult) {
        deliveryAttempt = 0
        if case .offline = connection { connection = .online }
        try? queue.remove(queued.id)
        pendingCommands.removeAll { $0.id == queued.id }
        confirm(result.navigation)
        if let item = result.item { confirm(item) }
        if let index = optimistic.firstIndex(where: { $0.queued.id == queued.id }) {
            if case .delete(let id)? = optimistic[index].effect, queued.command == .confirmDelete {
                confirmDeletion(of: id)
            }
            optimistic.remove(at: index)
        }
        rebase()
        for waiter in waiters.removeValue(forKey: queued.id) ?? [] { waiter.resume(returning: result) }
    }

    private func refused(_ queued: QueuedCommand, with error: StockroomError) {
        deliveryAttempt = 0
        try? queue.remove(queued.id)
        pendingCommands.removeAll { $0.id == queued.id }
        optimistic.removeAll { $0.queued.id == queued.id }
        if let current = error.currentItem { confirm(current) }
        failures.append(CommandFailure(id: queued.id, command: queued.command, error: error, at: Date()))
        rebase()
        for waiter in waiters.removeValue(forKey: queued.id) ?? [] { waiter.resume(throwing: error) }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? TransportError { return error.message }
        return "\(error)"
    }
}
