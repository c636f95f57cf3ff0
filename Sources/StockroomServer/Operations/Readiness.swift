import ServiceLifecycle
import StockroomStorage
import Synchronization

/// `/ready`'s answer: whether a write would succeed now, from a real write probe that runs at
/// most once per `maxAge` however often it is asked (a probe flood cannot become a write flood).
/// Callers that come while a probe runs share it, and none waits for it longer than `patience`:
/// a probe still waiting then (for a lock another process holds) is an answer too, within a
/// health check's timeout, and its own result is kept once it comes.
final class Readiness: Sendable {
    private let database: any Storage
    private let maxAge: Duration
    private let patience: Duration
    private let state = Mutex<(last: (at: ContinuousClock.Instant, reason: String?)?, running: Task<String?, Never>?)>((nil, nil))

    init(database: any Storage, maxAge: Duration = .seconds(1), patience: Duration = .seconds(2)) {
        self.database = database
        self.maxAge = maxAge
        self.patience = patience
    }

    /// Why the server is not ready, or nil when it is.
    func reason() async -> String? {
        if Task.isShuttingDownGracefully { return "the server is shutting down" }
        let running: Task<String?, Never>
        switch state.withLock({ state -> Probe in
            if let last = state.last, ContinuousClock.now - last.at < maxAge { return .cached(last.reason) }
            if let running = state.running { return .running(running) }
            let running = Task { [database] in
                let reason = await database.writeProbe()
                self.state.withLock { $0 = ((ContinuousClock.now, reason), nil) }
                return reason
            }
            state.running = running
            return .running(running)
        }) {
        case .cached(let reason): return reason
        case .running(let task): running = task
        }
        let patience = self.patience
        let late = "a write has waited over \(patience.components.seconds) s for the database (another process may hold its write lock)"
        // Awaiting a task's value cannot be cancelled: whichever of the probe and the clock ends
        // first answers, and the other finds the answer given.
        return await withCheckedContinuation { (answer: CheckedContinuation<String?, Never>) in
            let once = AnswerOnce(answer)
            let clock = Task {
                try? await Task.sleep(for: patience)
                once.give(late)
            }
            Task {
                once.give(await running.value)
                clock.cancel()
            }
        }
    }
}

/// A probe's answer within its `maxAge`, or the probe running now.
private enum Probe {
    case cached(String?)
    case running(Task<String?, Never>)
}

/// Resumes a continuation with the first answer given, once.
private final class AnswerOnce: Sendable {
    private let continuation: Mutex<CheckedContinuation<String?, Never>?>

    init(_ continuation: CheckedContinuation<String?, Never>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ answer: String?) {
        continuation.withLock { $0.take() }?.resume(returning: answer)
    }
}
