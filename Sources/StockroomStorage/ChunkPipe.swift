import Dispatch
import Synchronization

/// A bounded hand-off of byte chunks from a producer (a reader thread inside one read transaction,
/// or a task) to an asynchronous consumer (an HTTP response body). At most `depth` chunks wait
/// between the two; past that the producer's thread blocks until the consumer takes one, so a slow
/// client holds one read transaction and a few chunks, never the whole answer in memory.
public final class ChunkPipe: Sendable {
    private struct State {
        var chunks: [[UInt8]] = []
        var head = 0
        /// Set once the producer is done: nil while producing, `.success` at the end, `.failure` on an error.
        var end: Result<Void, any Error>?
        var cancelled = false
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
    }

    private let state = Mutex(State())
    /// Free places for chunks: the producer takes one per chunk, the consumer gives one back per chunk taken.
    private let space: DispatchSemaphore
    private let stallTimeout: Duration

    /// A pipe holding at most `depth` chunks; a producer kept waiting longer than `stallTimeout`
    /// (a client that stopped reading) gives up.
    public init(depth: Int = 4, stallTimeout: Duration = .seconds(30)) {
        // Made at 0 and raised: libdispatch traps when a semaphore is freed below its initial value,
        // which a pipe cancelled with chunks in flight would be.
        space = DispatchSemaphore(value: 0)
        for _ in 0..<max(1, depth) { space.signal() }
        self.stallTimeout = stallTimeout
    }

    // MARK: Producer (a blocking thread)

    /// Hands one chunk to the consumer, waiting while `depth` chunks wait already. Throws
    /// `ChunkPipe.Stopped` when the consumer cancelled or took nothing for `stallTimeout`.
    public func send(_ chunk: [UInt8]) throws {
        let nanoseconds = stallTimeout.components.seconds * 1_000_000_000 + stallTimeout.components.attoseconds / 1_000_000_000
        if space.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .timedOut {
            throw Stopped.stalled
        }
        let waiter: CheckedContinuation<[UInt8]?, any Error>? = try state.withLock { state in
            if state.cancelled { throw Stopped.cancelled }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.chunks.append(chunk)
            return nil
        }
        if let waiter {
            space.signal()
            waiter.resume(returning: chunk)
        }
    }

    /// `send` for a producer that is a task (a PostgreSQL read): the wait for space blocks a
    /// thread of Dispatch's, never one of the tasks' cooperative pool.
    public func send(_ chunk: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                do {
                    try self.send(chunk)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Ends the stream, after the chunks sent so far, with `error` or normally.
    public func finish(_ error: (any Error)? = nil) {
        let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.waiter = nil }
            return state.waiter
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
    }

    /// Whether the consumer is gone; a producer checks it between chunks.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    // MARK: Consumer (one task)

    /// The next chunk; nil once the producer finished and every chunk was taken; throws the producer's error.
    public func next() async throws -> [UInt8]? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, any Error>) in
                enum Outcome {
                    case chunk([UInt8])
                    case end(Result<Void, any Error>)
                    case cancelled
                    case wait
                }
                let outcome: Outcome = state.withLock { state in
                    if state.head < state.chunks.count {
                        let chunk = state.chunks[state.head]
                        state.head += 1
                        if state.head == state.chunks.count {
                            state.chunks.removeAll(keepingCapacity: true)
                            state.head = 0
                        }
                        return .chunk(chunk)
                    }
                    if state.cancelled { return .cancelled }
                    if let end = state.end { return .end(end) }
                    state.waiter = continuation
                    return .wait
                }
                switch outcome {
                case .chunk(let chunk):
                    space.signal()
                    continuation.resume(returning: chunk)
                case .end(.success):
                    continuation.resume(returning: nil)
                case .end(.failure(let error)):
                    continuation.resume(throwing: error)
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .wait:
                    break
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The consumer is gone: the producer stops at its next chunk (and at once if it waits for space).
    public func cancel() {
        let waiter: CheckedContinuation<[UInt8]?, any Error>? = state.withLock { state in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            state.chunks.removeAll()
            state.head = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: CancellationError())
        space.signal()
    }

    /// Why a producer stopped early.
    public enum Stopped: Error, Sendable {
        /// The consumer cancelled.
        case cancelled
        /// The consumer took no chunk for the stall timeout.
        case stalled
    }
}
