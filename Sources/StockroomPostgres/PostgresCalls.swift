import Logging
import PostgresNIO
import StockroomStorage
import Synchronization

/// Every storage call in flight, so that none waits for ever. A call runs in a task of its own and
/// its caller waits for whichever comes first: the call's result, or the watchdog
/// (`PostgresStore.watch`) giving up on it. The watchdog gives up on a call that got no pooled
/// connection within the store's deadline (while PostgreSQL is unreachable the pool would queue it
/// until its circuit breaker trips, a minute later), on a call whose connection has closed under it
/// (a query written to a connection NIO has already closed is never answered: seen after PostgreSQL
/// restarts), and on a call past its bound. A call given up on is left to end by itself.
final class PostgresCalls: Sendable {
    private let state = Mutex<(next: Int, calls: [Int: any WatchedCall])>((0, [:]))

    func insert(_ call: any WatchedCall) -> Int {
        state.withLock { state in
            state.next += 1
            state.calls[state.next] = call
            return state.next
        }
    }

    func remove(_ id: Int) {
        _ = state.withLock { $0.calls.removeValue(forKey: id) }
    }

    var inFlight: [Int: any WatchedCall] { state.withLock { $0.calls } }
}

/// What the watchdog sees of a call.
protocol WatchedCall: Sendable {
    var started: ContinuousClock.Instant { get }
    var bound: Duration? { get }
    /// The call commits writes: when it is abandoned, their outcome is unknown.
    var writes: Bool { get }
    var connection: PostgresConnection? { get }
    /// Counts the watchdog's rounds that found the connection closed.
    func sawClosedConnection() -> Int
    func abandon(_ error: any Error)
}

/// One call: its connection once it has one, and its caller's continuation, resumed once.
final class PendingCall<Value: Sendable>: WatchedCall {
    let started = ContinuousClock.now
    let writes: Bool
    private let state: Mutex<State>

    private struct State {
        var bound: Duration?
        var continuation: CheckedContinuation<Value, any Error>?
        var result: Result<Value, any Error>?
        var connection: PostgresConnection?
        var closedRounds = 0
        var work: Task<Void, Never>?
    }

    init(bound: Duration?, writes: Bool = false) {
        self.writes = writes
        state = Mutex(State(bound: bound))
    }

    var bound: Duration? { state.withLock { $0.bound } }

    /// Lifts the bound (a listener, once it listens, runs for as long as its connection lasts).
    func unbound() {
        state.withLock { $0.bound = nil }
    }

    var connection: PostgresConnection? { state.withLock { $0.connection } }

    func obtained(_ connection: PostgresConnection) {
        state.withLock { $0.connection = connection }
    }

    func sawClosedConnection() -> Int {
        state.withLock { state in
            state.closedRounds += 1
            return state.closedRounds
        }
    }

    func started(_ work: Task<Void, Never>) {
        let settled = state.withLock { state in
            state.work = work
            return state.result != nil
        }
        if settled { work.cancel() }
    }

    /// The caller's continuation, resumed at once if the call is settled already.
    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        let settled: Result<Value, any Error>? = state.withLock { state in
            if state.result == nil { state.continuation = continuation }
            return state.result
        }
        if let settled { continuation.resume(with: settled) }
    }

    /// Settles the call with `result` unless it is settled already.
    func settle(_ result: Result<Value, any Error>) {
        let continuation: CheckedContinuation<Value, any Error>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    func abandon(_ error: any Error) {
        settle(.failure(error))
        state.withLock { $0.work }?.cancel()
    }

    /// Runs `body` in a task of its own and waits until the call is settled: by `body`, or by
    /// `abandon` (the watchdog, or, when `cancellable`, the caller's cancellation), whichever
    /// comes first.
    func run(cancellable: Bool = true, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        guard cancellable else { return try await settled(body) }
        return try await withTaskCancellationHandler {
            try await settled(body)
        } onCancel: {
            abandon(CancellationError())
        }
    }

    private func settled(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            wait(continuation)
            started(
                Task {
                    do {
                        settle(.success(try await body()))
                    } catch {
                        settle(.failure(error))
                    }
                })
        }
    }
}

extension PostgresStore {
    /// Runs `body` with a pooled connection (see `PostgresCalls`): `unavailable` when no connection
    /// comes within `deadline`, when the connection closes under the call, or past `bound` (nil:
    /// none, for a call that streams for as long as its client reads). `statement_timeout` and
    /// `lock_timeout` bound a statement only while PostgreSQL answers at all: a server that stops
    /// answering on an open connection (a frozen host, a network partition without a reset) leaves
    /// a call waiting until its bound, `answerBound` for the reads and writes of the request path.
    /// `cancellable: false` for a batch of writes (`PostgresCommitter`): the task that runs it is
    /// one writer's, and its cancellation (its client went away) must not fail the others' writes.
    func leased<Value: Sendable>(
        bound: Duration? = nil, writes: Bool = false, cancellable: Bool = true, _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        await started.wait()
        if let epoch = replacedEpoch.withLock({ $0 }) {
            throw StoreError.unavailable(
                "the database was given a new epoch (\(epoch), a restore) since this daemon started: restart it")
        }
        let call = PendingCall<Value>(bound: bound, writes: writes)
        let id = calls.insert(call)
        defer { calls.remove(id) }
        return try await call.run(cancellable: cancellable) {
            try await self.pools.withConnection { connection in
                call.obtained(connection)
                return try await body(connection)
            }
        }
    }

    /// The bound of a request's reads and of a write batch's transaction: `statement_timeout`, which
    /// no statement of a PostgreSQL that answers outlasts, so past it the server is not answering.
    var answerBound: Duration { deadline * 2 }

    /// Runs `body` (storage calls) and answers `unavailable` past `deadline`, whatever `body` does.
    func withDeadline<Value: Sendable>(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let call = PendingCall<Value>(bound: deadline)
        let timer = Task {
            try await Task.sleep(for: deadline)
            call.abandon(StoreError.unavailable("PostgreSQL did not answer within \(deadline)"))
        }
        defer { timer.cancel() }
        return try await call.run(body)
    }

    /// The watchdog of `PostgresCalls`, every `watchInterval` until cancelled.
    func watch() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.watchInterval)
            let now = ContinuousClock.now
            for (id, call) in calls.inFlight {
                let elapsed = call.started.duration(to: now)
                let error: StoreError?
                let unknown = call.writes ? " (a write's outcome is unknown: a retry with the same Idempotency-Key is safe)" : ""
                if let connection = call.connection {
                    if connection.isClosed, call.sawClosedConnection() >= 2 {
                        // Two rounds apart, so that NIO has failed whatever it was going to fail.
                        error = .unavailable("the connection to PostgreSQL closed during the call\(unknown)")
                    } else if let bound = call.bound, elapsed > bound {
                        error = .unavailable("PostgreSQL did not answer within \(bound)\(unknown)")
                        // Stuck: the pool replaces a connection that closes.
                        Task { try? await connection.close() }
                    } else {
                        error = nil
                    }
                } else if elapsed > deadline {
                    error = .unavailable("no connection to PostgreSQL within \(deadline)")
                } else {
                    error = nil
                }
                if let error {
                    calls.remove(id)
                    call.abandon(error)
                }
            }
        }
    }

    /// How often the watchdog looks at the calls in flight.
    static let watchInterval: Duration = .milliseconds(250)
}
