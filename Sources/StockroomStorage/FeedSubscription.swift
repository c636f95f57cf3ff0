import Foundation
import Synchronization

/// One subscriber's wake-up signal: at most one pending notification (bounded, never blocks a writer).
public final class FeedSubscription: Sendable {
    private struct State {
        var pending = false
        var closed = false
        var waiter: Waiter?
        var nextWaitID = 0
        var expiredWaitID = -1
    }

    /// A wait in progress, of a layout known when compiling: a struct, not a tuple; its wake-up
    /// one closure, not an enum of a continuation or a callback; its deadline a `Duration`, not a
    /// `ContinuousClock.Instant` (whose layout the Concurrency library keeps to itself). Either of
    /// those made every copy go through the runtime's value witnesses and metadata lookups, which
    /// cost more than the rest of a delivery's wake-up. Handed out of the lock whole: a bare
    /// closure returned through `withLock`'s generic result would be re-wrapped in an allocated
    /// thunk on every wake-up.
    private struct Waiter {
        let id: Int
        /// Resumes the suspended task, or calls the parked stream's callback (`park(until:onWake:)`).
        let wake: @Sendable (Bool) -> Void
        /// The deadline as the time since `origin`.
        let deadline: Duration?
    }

    /// The instant deadlines are counted from.
    private static let origin = ContinuousClock.now

    private static func sinceOrigin(_ instant: ContinuousClock.Instant) -> Duration { origin.duration(to: instant) }

    /// What the subscriber may see.
    public let filter: FeedFilter
    private let state = Mutex(State())
    private let hub: ChangeHub

    /// Where its stream stands: every entry up to it that concerns the subscriber was read
    /// (`read(through:)`, which a stream calls with its positions in order).
    private let position = Atomic<Int64>(0)
    /// The newest entry that concerned the subscriber (woke it), or a position past which the hub
    /// did not check the entries for it (a new filter, a head moved without entries). Written
    /// under the hub's lock.
    private let lastConcerning = Atomic<Int64>(0)
    /// The first entry after `position` that concerned the subscriber, when known: no entry
    /// between them did. 0 when not known. Written under the hub's lock.
    private let firstConcerning = Atomic<Int64>(0)

    package init(filter: FeedFilter, hub: ChangeHub) {
        self.filter = filter
        self.hub = hub
    }

    /// Records that its stream has read every entry up to `seq` that concerns it.
    public func read(through seq: Int64) {
        position.store(seq, ordering: .relaxed)
    }

    /// The hub woke the subscriber for entries up to `last`, the first of them that concerned it
    /// at `first`. Under the hub's lock. A position `position` loads late is an older one, which
    /// only leaves `firstConcerning` unknown where it could have been known.
    package func concerned(from first: Int64, through last: Int64) {
        let position = position.load(ordering: .relaxed)
        if firstConcerning.load(ordering: .relaxed) <= position {
            // Stale or unknown: known again only when nothing before `first` still waits to be read.
            firstConcerning.store(lastConcerning.load(ordering: .relaxed) <= position ? first : 0, ordering: .relaxed)
        }
        lastConcerning.store(last, ordering: .relaxed)
    }

    /// The entries up to `head` were not checked for the subscriber: any of them may concern it.
    /// Under the hub's lock.
    package func unchecked(through head: Int64) {
        firstConcerning.store(0, ordering: .relaxed)
        lastConcerning.store(max(lastConcerning.load(ordering: .relaxed), head), ordering: .relaxed)
    }

    /// Where a stream at `seq` may read on from without missing an entry that concerns it: `head`
    /// when none after `seq` did, else just before the first that did, when known. Nil otherwise.
    /// Under the hub's lock.
    package func unconcerned(after seq: Int64, head: Int64) -> Int64? {
        if lastConcerning.load(ordering: .relaxed) <= seq { return head }
        let first = firstConcerning.load(ordering: .relaxed)
        return first > seq ? first - 1 : nil
    }

    /// Whether the subscription was closed by the hub.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether a wait is parked now (for tests).
    package var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Unregisters the subscription and ends any wait.
    public func cancel() {
        hub.remove(self)
        close()
    }

    package func notify() {
        let waiter: Waiter? = state.withLock { state in
            guard let waiter = state.waiter.take() else {
                state.pending = true
                return nil
            }
            return waiter
        }
        waiter?.wake(true)
    }

    package func close() {
        let waiter: Waiter? = state.withLock { state in
            state.closed = true
            return state.waiter.take()
        }
        waiter?.wake(false)
    }

    /// Waits until a relevant commit (true), or until `timeout` passes, the task is cancelled
    /// or the subscription closes (false). Starts a timer task for the timeout: for one-off waits
    /// (a long-poll); a stream waits with `wait(until:)`, which costs no task.
    public func wait(timeout: Duration) async -> Bool {
        guard let id = beginWait() else { return true }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(id)
        }
        defer { timer.cancel() }
        return await suspend(id, deadline: nil)
    }

    /// Waits until a relevant commit (true), or until the task is cancelled, the subscription
    /// closes or `expireWait(ifDueBy:)` is called at or after `deadline` (false). Keeps no time of
    /// its own: whoever calls `expireWait` does, one sweep for every stream instead of a timer each.
    public func wait(until deadline: ContinuousClock.Instant) async -> Bool {
        guard let id = beginWait() else { return true }
        return await suspend(id, deadline: deadline)
    }

    /// Ends the wait in progress, if any, when its deadline is at or before `now`.
    public func expireWait(ifDueBy now: ContinuousClock.Instant) {
        let now = Self.sinceOrigin(now)
        let waiter: Waiter? = state.withLock { state in
            guard let deadline = state.waiter?.deadline, deadline <= now else { return nil }
            return state.waiter.take()
        }
        waiter?.wake(false)
    }

    /// `wait(until:)` without a task: returns at once what the wait would return without suspending
    /// (true: a notification was pending; false: the subscription is closed), or nil once it has
    /// stored `onWake`, which is then called exactly once, from whichever thread ends the wait, with
    /// what `wait(until:)` would have returned. A stream parked this way holds no task while idle.
    public func park(until deadline: ContinuousClock.Instant, onWake: @escaping @Sendable (Bool) -> Void) -> Bool? {
        state.withLock { state -> Bool? in
            if state.pending {
                state.pending = false
                return true
            }
            if state.closed { return false }
            state.nextWaitID += 1
            state.waiter = Waiter(id: state.nextWaitID, wake: onWake, deadline: Self.sinceOrigin(deadline))
            return nil
        }
    }

    /// Takes a pending notification (nil: no need to wait) or numbers a new wait.
    private func beginWait() -> Int? {
        state.withLock { state in
            if state.pending {
                state.pending = false
                return nil
            }
            state.nextWaitID += 1
            return state.nextWaitID
        }
    }

    private func suspend(_ id: Int, deadline: ContinuousClock.Instant?) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate: Bool? = state.withLock { state in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if state.closed || state.expiredWaitID == id || Task.isCancelled { return false }
                    state.waiter = Waiter(id: id, wake: { continuation.resume(returning: $0) }, deadline: deadline.map(Self.sinceOrigin))
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            expire(id)
        }
    }

    private func expire(_ id: Int) {
        let waiter: Waiter? = state.withLock { state in
            state.expiredWaitID = max(state.expiredWaitID, id)
            guard state.waiter?.id == id else { return nil }
            return state.waiter.take()
        }
        waiter?.wake(false)
    }
}
