import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// The change feed, as an `AsyncSequence` of ``FeedEvent``, over Server-Sent Events, a WebSocket
/// or long-polls (``FeedOptions/transport``).
///
/// It keeps the cursor of the last change it delivered and reconnects from it after any drop
/// (`Last-Event-ID`, `since=`), with exponential backoff and jitter; a stream silent for longer
/// than `FeedOptions.heartbeatTimeout` counts as dropped. On `410 resyncRequired` it reads a new
/// snapshot, delivers it as `.resync`, and continues from its cursor. No change is delivered
/// twice or skipped. The sequence ends by throwing only for errors a retry cannot fix
/// (`401 unauthorized`, `403 forbidden`, `400`); stop it by ending the loop or cancelling its task.
///
/// The connection reads ahead of its reader by at most 32 MiB of the stream (about 70,000 item
/// changes), and the reader takes what has come in one hand-over: a catch-up of many changes is not
/// paid per change, and a reader busy for a moment does not stop the server's sending.
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = FeedEvent

    let client: StockroomClient
    let start: FeedStart
    let options: FeedOptions

    public func makeAsyncIterator() -> Iterator {
        let buffer = FeedBuffer(limit: FeedBuffer.defaultLimit)
        let runner = FeedRunner(client: client, options: options, buffer: buffer)
        let start = self.start
        let task = Task { await runner.run(from: start) }
        return Iterator(base: buffer, owner: TaskOwner(task))
    }

    /// Reads the next event; the connection closes when the iterator goes away.
    public struct Iterator: AsyncIteratorProtocol {
        let base: FeedBuffer
        let owner: TaskOwner
        /// The runs of events taken from the buffer in one hand-over: `run` is the one read now,
        /// from its `taken`th event on.
        var handedOver: [[FeedEvent]] = []
        var run = 0
        var taken = 0
        /// How many events of this hand-over were read.
        var readOfHandOver = 0

        public mutating func next() async throws -> FeedEvent? {
            try await next(isolation: nil)
        }

        /// Reads the next event on the caller's actor: an event already handed over is read
        /// without a suspension, except that every 256th lets the actor's other work run (a
        /// catch-up read on the main actor does not hold it for a whole hand-over).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> FeedEvent? {
            if !skipReadRuns() {
                guard try await takeHandOver(isolation: actor) else { return nil }
            }
            if readOfHandOver > 0, readOfHandOver.isMultiple(of: Self.eventsBetweenYields) { await Task.yield() }
            defer {
                taken += 1
                readOfHandOver += 1
            }
            return handedOver[run][taken]
        }

        /// Reads the events that have come, at most 256 at once and none past the end of the read
        /// of the connection they came in, waiting for one when none has: a reader that takes them
        /// together (``SyncedStore/apply(contentsOf:)``) pays for a catch-up per batch, not per
        /// event. Between two batches of one hand-over the reader's actor is let go once. Mixed
        /// with `next()`, every event is read once, in order.
        public mutating func nextBatch(isolation actor: isolated (any Actor)? = #isolation) async throws -> ArraySlice<FeedEvent>? {
            if !skipReadRuns() {
                guard try await takeHandOver(isolation: actor) else { return nil }
            }
            if readOfHandOver > 0 { await Task.yield() }
            let events = handedOver[run]
            let end = Swift.min(events.count, taken + Self.eventsBetweenYields)
            defer {
                readOfHandOver += end - taken
                taken = end
            }
            return events[taken..<end]
        }

        /// Moves past the runs read to their end: whether an event of this hand-over is left to
        /// read (no suspension, no async call, on the path of every event).
        private mutating func skipReadRuns() -> Bool {
            while run < handedOver.count, taken == handedOver[run].count {
                run += 1
                taken = 0
            }
            return run < handedOver.count
        }

        /// Takes the next hand-over, once every event of this one was read; false once the feed ended.
        private mutating func takeHandOver(isolation actor: isolated (any Actor)?) async throws -> Bool {
            // Nothing of the last hand-over is kept while the next is awaited.
            handedOver = []
            guard let runs = try await base.next() else { return false }
            handedOver = runs
            run = 0
            taken = 0
            readOfHandOver = 0
            return true
        }

        /// How many events of a hand-over are read before the reader's actor is let go once.
        static let eventsBetweenYields = 256
    }
}

/// Cancels the task that reads the connection once nobody iterates the feed any more.
final class TaskOwner: Sendable {
    let task: Task<Void, Never>
    init(_ task: Task<Void, Never>) { self.task = task }
    deinit { task.cancel() }
}

/// The stream ended without an error: the server shut down or closed it.
struct StreamEnded: Error, CustomStringConvertible {
    var description: String { "the server ended the stream" }
}

/// No byte arrived within the heartbeat timeout.
struct HeartbeatMissed: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "no heartbeat for \(timeout)" }
}

extension StockroomError {
    /// An error from an SSE `error` event carries no status; the code decides it (the contract's
    /// table, `ErrorCode.httpStatus`; 400 for a code this SDK does not know).
    func withStatusFromCode() -> StockroomError {
        var error = self
        error.status = code.httpStatus ?? 400
        return error
    }
}
