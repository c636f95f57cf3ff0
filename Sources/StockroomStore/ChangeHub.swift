import Foundation
import GRDB
import Synchronization

/// Which changes a feed subscriber may see: items for everyone, navigation for its owner only.
public struct FeedFilter: Hashable, Sendable {
    /// The subscriber's user.
    public var user: String
    /// The topics it follows.
    public var topics: Set<ChangeEntity>

    /// Creates a filter.
    public init(user: String, topics: Set<ChangeEntity>) {
        self.user = user
        self.topics = topics
    }

    /// Whether a change of `entity` owned by `owner` passes the filter.
    public func sees(entity: ChangeEntity, owner: String?) -> Bool {
        switch entity {
        case .item: topics.contains(.item)
        case .navigation: topics.contains(.navigation) && owner == user
        }
    }
}

/// The observation layer: learns each commit's new change entries from the commit itself and wakes
/// exactly the subscribers whose filter they touch. A wake-up carries no data: subscribers read the
/// log past their own cursor, so a coalesced or missed wake-up cannot lose an entry.
public final class ChangeHub: Sendable {
    private struct State {
        var head: Int64
        var subscribers: [ObjectIdentifier: FeedSubscription] = [:]
    }

    private let state: Mutex<State>

    init(head: Int64) {
        state = Mutex(State(head: head))
    }

    /// The newest committed seq.
    public var head: Int64 { state.withLock { $0.head } }

    /// Registers a subscriber; call before its first read so that no commit slips between the two.
    public func subscribe(_ filter: FeedFilter) -> FeedSubscription {
        let subscription = FeedSubscription(filter: filter, hub: self)
        state.withLock { $0.subscribers[ObjectIdentifier(subscription)] = subscription }
        return subscription
    }

    func remove(_ subscription: FeedSubscription) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(subscription)) }
    }

    /// Called after a commit that appended entries up to `head`; `touched` lists their topics and owners.
    func committed(head: Int64, touched: [(entity: ChangeEntity, owner: String?)]) {
        let subscribers = state.withLock { state in
            state.head = max(state.head, head)
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers where touched.contains(where: { subscriber.filter.sees(entity: $0.entity, owner: $0.owner) }) {
            subscriber.notify()
        }
    }

    /// Ends every subscription (graceful shutdown).
    public func closeAll() {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.close() }
    }
}

/// One subscriber's wake-up signal: at most one pending notification (bounded, never blocks a writer).
public final class FeedSubscription: Sendable {
    private struct State {
        var pending = false
        var closed = false
        var waiter: (id: Int, continuation: CheckedContinuation<Bool, Never>)?
        var nextWaitID = 0
        var expiredWaitID = -1
    }

    /// What the subscriber may see.
    public let filter: FeedFilter
    private let state = Mutex(State())
    private let hub: ChangeHub

    init(filter: FeedFilter, hub: ChangeHub) {
        self.filter = filter
        self.hub = hub
    }

    /// Whether the subscription was closed by the hub.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Unregisters the subscription and ends any wait.
    public func cancel() {
        hub.remove(self)
        close()
    }

    func notify() {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        continuation?.resume(returning: true)
    }

    func close() {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        continuation?.resume(returning: false)
    }

    /// Waits until a relevant commit (true), or until `timeout` passes, the task is cancelled
    /// or the subscription closes (false).
    public func wait(timeout: Duration) async -> Bool {
        let id: Int? = state.withLock { state in
            if state.pending {
                state.pending = false
                return nil
            }
            state.nextWaitID += 1
            return state.nextWaitID
        }
        guard let id else { return true }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(id)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate: Bool? = state.withLock { state in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if state.closed || state.expiredWaitID == id || Task.isCancelled { return false }
                    state.waiter = (id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            expire(id)
        }
    }

    private func expire(_ id: Int) {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            state.expiredWaitID = max(state.expiredWaitID, id)
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        continuation?.resume(returning: false)
    }
}

/// Watches commits on the writer connection and tells the hub about the change entries they appended.
final class ChangeObserver: TransactionObserver {
    private let hub: ChangeHub
    // Only touched on the writer's serial queue; the Mutex makes that checkable by the compiler.
    private let appended = Mutex(false)

    init(hub: ChangeHub) {
        self.hub = hub
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if case .insert(let table) = eventKind { return table == "changes" }
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {
        appended.withLock { $0 = true }
        stopObservingDatabaseChangesUntilNextTransaction()
    }

    func databaseDidCommit(_ db: Database) {
        guard appended.withLock({ flag in defer { flag = false }; return flag }) else { return }
        do {
            let rows = try Row.fetchAll(
                db, sql: "SELECT seq, entity, owner FROM changes WHERE seq > ? ORDER BY seq", arguments: [hub.head])
            guard let last = rows.last else { return }
            let touched = rows.compactMap { row -> (entity: ChangeEntity, owner: String?)? in
                guard let entity = ChangeEntity(rawValue: row["entity"]) else { return nil }
                return (entity, row["owner"])
            }
            hub.committed(head: last["seq"], touched: touched)
        } catch {
            // Subscribers still read the log by cursor; the next commit or heartbeat catches them up.
        }
    }

    func databaseDidRollback(_ db: Database) {
        appended.withLock { $0 = false }
    }
}
