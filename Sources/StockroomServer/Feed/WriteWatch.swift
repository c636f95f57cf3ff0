import Synchronization

/// When the write in progress, if any, began.
final class WriteWatch: Sendable {
    private let started = Mutex<ContinuousClock.Instant?>(nil)

    func begin() { started.withLock { $0 = .now } }
    func end() { started.withLock { $0 = nil } }

    /// Whether a write has been in progress for longer than `limit` at `now`.
    func stalled(longerThan limit: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        started.withLock { start in start.map { now - $0 > limit } ?? false }
    }
}
