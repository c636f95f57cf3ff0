import Logging
import NIOCore
import StockroomCore
import StockroomStorage
import StockroomWire
import Synchronization

/// An SSE stream that holds no task while it waits.
///
/// A stream that waits in a task keeps that task's frames (Hummingbird's connection closure, the
/// body, the follow loop) for as long as it stays open, idle or not; with many idle streams that
/// is most of the process. Here the connection's task ends once the stream has caught up
/// (`ProtocolSwitchHandler` keeps the connection, `StreamDetached` lets Hummingbird go), and the
/// stream is only a few objects: its subscription, whose wake-up is a callback instead of a
/// continuation, and its place in `FeedStreams`. Each wake-up (a commit it
/// sees, a heartbeat due, a revocation, its client or the server closing) runs one round in a
/// short task: read past the cursor (from memory, else the log), write the frames through the
/// handler, park again. Rounds never overlap: a round arms the next wake-up only as it ends.
final class ParkedSSEStream: Sendable {
    private let database: any Storage
    private let start: FeedController.Subscription
    private let subscription: FeedSubscription
    private let token: TokenCheck
    private let registration: FeedStreams.Stream
    private let frames: SSEFrames
    private let heartbeat: Duration
    private let response: ParkedResponse
    private let deliveries: LoopDeliveries.Queue
    private let logger: Logger
    /// Where the stream stands between rounds. Only the round in progress touches it; the lock
    /// makes the hand-over from one round's task to the next checkable.
    private let position: Mutex<(seq: Int64, idle: Bool)>
    /// The newest cursor the client was given (a change's `id:`, or a progress event's): an idle
    /// round whose cursor moved past it (past entries the filter, topics or owner hid) sends
    /// `event: progress`.
    private let announced: Mutex<Int64>

    private init(
        database: any Storage, start: FeedController.Subscription, subscription: FeedSubscription, token: TokenCheck,
        registration: FeedStreams.Stream, frames: SSEFrames, heartbeat: Duration, response: ParkedResponse,
        deliveries: LoopDeliveries.Queue, logger: Logger
    ) {
        self.database = database
        self.start = start
        self.subscription = subscription
        self.token = token
        self.registration = registration
        self.frames = frames
        self.heartbeat = heartbeat
        self.response = response
        self.deliveries = deliveries
        self.logger = logger
        self.position = Mutex((start.seq, false))
        self.announced = Mutex(start.seq)
    }

    /// Starts following the feed on a parked response: the stream's first round (its catch-up) runs
    /// in the caller's task, and `onEnd` runs once the connection has closed, however it ends.
    static func start(
        database: any Storage, streams: FeedStreams, frames: SSEFrames, settings: FeedSettings, start: FeedController.Subscription,
        tokenID: TokenID, response: ParkedResponse, logger: Logger, onEnd: @escaping @Sendable () -> Void
    ) async {
        let subscription = database.hub.subscribe(start.filter)
        let registration = streams.register(
            subscription: subscription, channel: response.channel, transport: .sse, close: { response.close() })
        let stream = ParkedSSEStream(
            database: database, start: start, subscription: subscription, token: TokenCheck(database: database, tokenID: tokenID),
            registration: registration, frames: frames, heartbeat: settings.heartbeat, response: response,
            deliveries: streams.deliveries.queue(for: response.channel.eventLoop), logger: logger)
        response.channel.closeFuture.whenComplete { _ in
            subscription.cancel()
            streams.remove(registration)
            onEnd()
        }
        do {
            try await stream.send([Self.open])
        } catch {
            response.close()
            return
        }
        await stream.round()
    }

    static let open = SSEFrames.chunk(of: ByteBuffer(string: ": open\n\n"))
    static let heartbeatFrame = SSEFrames.chunk(of: ByteBuffer(string: ": heartbeat\n\n"))

    /// Delivers everything past the cursor, then parks; or ends the stream.
    private func round() async {
        var (seq, idle) = position.withLock { $0 }
        do {
            while !subscription.isClosed {
                let page: FeedPage
                do {
                    page = try await start.read(after: seq, in: database, following: subscription) {
                        try await database.readChanges(after: $0, filter: start.filter, limit: 200)
                    }
                } catch StoreError.resyncRequired(let message) {
                    return try await end(with: APIError(.resyncRequired, message))
                }
                // After the read: a change committed after a revocation reaches the hub only after
                // the revocation's generation does, so it is never delivered.
                guard try await token.isLive() else { return try await end(with: FeedController.revoked) }
                if let last = page.changes.last {
                    try await send(frames.chunks(page.changes))
                    announced.withLock { $0 = last.seq }
                    FeedController.sent(page.changes.count, transport: .sse)
                }
                seq = page.cursor.seq
                if page.hasMore { continue }
                if idle {
                    // Idle: ask the database itself, for a revocation by another process.
                    guard try await token.isLive(force: true) else { return try await end(with: FeedController.revoked) }
                    if seq > announced.withLock({ $0 }) {
                        // The stream's filter, topics or owner hid what the log gained since: the
                        // cursor moves without a change, so that a reconnect starts here and not
                        // at a seq the log may have trimmed.
                        try await send([SSEFrames.chunk(of: SSEFrames.progressEvent(page.cursor))])
                        announced.withLock { $0 = seq }
                    } else {
                        try await send([Self.heartbeatFrame])
                    }
                }
                position.withLock { $0 = (seq, false) }
                guard let woke = parkAgain() else { return }
                idle = !woke
            }
            // Closed: by graceful shutdown (`ChangeHub.closeAll`), the client's close, or the sweep.
            if registration.wasCutOff { response.close() } else { response.end() }
        } catch let error as StoreError {
            // The database failed under the stream (PostgreSQL out of reach, a read past its
            // bound): the stream ends with the error a request would get, and the client resumes
            // from its last `id:`.
            logger.warning("SSE stream ended: the database failed", metadata: ["reason": "\(error)"])
            do { try await end(with: APIError(store: error)) } catch { response.close() }
        } catch {
            logger.debug("SSE subscriber ended", metadata: ["reason": "\(error)"])
            response.close()
        }
    }

    private func wake(_ woke: Bool) {
        position.withLock { $0.idle = !woke }
        deliveries.wake(self, woke: woke)
    }

    /// A wake-up, run on the channel's loop by `LoopDeliveries`: delivered in place when it can be,
    /// else by a round in a task. Made on the channel's loop, that task runs there
    /// (`GenericGlobalExecutor`), where its writes go without another hop.
    func wakeOnLoop(_ woke: Bool) {
        if !woke || !deliverRecent() { Task { await round() } }
    }

    /// Waits for the next wake-up without a task (`FeedSubscription.park`); non-nil when it came already.
    private func parkAgain() -> Bool? {
        subscription.park(until: .now + heartbeat) { [self] woke in wake(woke) }
    }

    /// The common wake-up, on the channel's loop with no task: a commit whose changes are still in
    /// memory, the token generation unchanged, a socket that takes writes. Writes them and parks
    /// again; false, having done nothing, when a round is needed instead (the log, the database,
    /// a heartbeat, a full socket, an end).
    private func deliverRecent() -> Bool {
        let channel = response.channel
        guard !subscription.isClosed, channel.isWritable, !registration.wasCutOff else { return false }
        let seq = position.withLock { $0.seq }
        // The changes first, then the token: as in `round`, a change committed after a revocation
        // is in memory only once the revocation's generation is. Each change's shared chunk is
        // taken where the hub keeps the change; a stream with an item filter reads a page instead.
        var chunks: [ByteBuffer] = []
        let last: Int64?
        let cursor: FeedCursor
        if let shown = database.hub.forEachRecentChange(after: seq, filter: start.filter, limit: 200, { chunks.append(frames.chunk($0)) }) {
            (last, cursor) = shown
        } else if start.filter.items != nil, let page = database.hub.recentChanges(after: seq, filter: start.filter, limit: 200), !page.hasMore {
            chunks = page.changes.map(frames.chunk)
            (last, cursor) = (page.changes.last?.seq, page.cursor)
        } else {
            return false
        }
        guard !token.needsRead else { return false }
        if let last {
            response.write(chunks: chunks)
            announced.withLock { $0 = last }
            FeedController.sent(chunks.count, transport: .sse)
        }
        position.withLock { $0 = (cursor.seq, false) }
        subscription.read(through: cursor.seq)
        guard let woke = parkAgain() else { return true }
        // Woken again already (another commit, a close): the next wake-up, as if it came now.
        position.withLock { $0.idle = !woke }
        wakeOnLoop(woke)
        return true
    }

    /// Ends the stream with the contract's `error` event.
    private func end(with error: APIError) async throws {
        try await send([SSEFrames.chunk(of: SSEFrames.errorEvent(error))])
        response.end()
    }

    /// Writes `chunks` (each an HTTP/1.1 chunk, `SSEFrames.chunk(of:)`) once the connection takes
    /// writes. A client that stops reading fills the socket and NIO's buffer up to its high-water
    /// mark; the next write then waits here, under the write watch, and the sweep cuts the stream
    /// off after the write timeout.
    private func send(_ chunks: [ByteBuffer]) async throws {
        let channel = response.channel
        let watch = registration.watch
        watch.begin()
        defer { watch.end() }
        while !channel.isWritable, channel.isActive, !subscription.isClosed {
            try await ProtocolSwitchHandler.untilWritable(channel)
        }
        guard channel.isActive, !registration.wasCutOff else { throw ChannelError.ioOnClosedChannel }
        response.write(chunks: chunks)
    }
}
