import Metrics
import NIOCore
import ServiceLifecycle
import StockroomCore
import StockroomWire
import StockroomStorage
import StockroomStore
import Synchronization

/// The feed's open streams (SSE and WebSocket) and the one task that keeps time for all of them:
/// each tick it ends the wait of every stream whose heartbeat is due, and cuts off every stream
/// whose write has outlasted the write timeout (a client that stopped reading). A stream itself
/// runs no timer and no watchdog task: an idle stream is one suspended task (a WebSocket) or no
/// task at all (SSE, `ParkedSSEStream`), and 20,000 idle streams cost one wake-up per tick
/// instead of 20,000 a second.
final class FeedStreams: Service, Sendable {
    /// One stream, as the sweep sees it.
    final class Stream: Sendable {
        let subscription: FeedSubscription
        let channel: any Channel
        let transport: FeedTransport
        let watch = WriteWatch()
        private let cut = Atomic<Bool>(false)
        /// Closes the stream's connection (a parked stream's goes through its handler).
        private let close: @Sendable () -> Void

        init(subscription: FeedSubscription, channel: any Channel, transport: FeedTransport, close: @escaping @Sendable () -> Void) {
            self.subscription = subscription
            self.channel = channel
            self.transport = transport
            self.close = close
        }

        /// Whether the sweep cut the stream off because a write outlasted its limit.
        var wasCutOff: Bool { cut.load(ordering: .relaxed) }

        /// Closes the connection, which fails the stuck write, and the subscription, which ends the
        /// stream's loop; true the first time only.
        func cutOff() -> Bool {
            guard !cut.exchange(true, ordering: .relaxed) else { return false }
            close()
            subscription.cancel()
            return true
        }
    }

    let writeTimeout: Duration
    /// Where parked SSE streams' wake-ups wait for their event loop.
    let deliveries = LoopDeliveries()
    /// How often the sweep runs: a quarter of the shorter of the two, at most a second. A heartbeat
    /// or a cut-off comes up to one tick late.
    let tick: Duration
    /// By connection: HTTP/1.1 serves one request at a time, so a connection has one stream at most.
    private let streams = Mutex<[ObjectIdentifier: Stream]>([:])

    init(settings: FeedSettings) {
        writeTimeout = settings.writeTimeout
        tick = min(min(settings.heartbeat, settings.writeTimeout) / 4, .seconds(1))
    }

    func register(
        subscription: FeedSubscription, channel: any Channel, transport: FeedTransport,
        close: (@Sendable () -> Void)? = nil
    ) -> Stream {
        let stream = Stream(
            subscription: subscription, channel: channel, transport: transport, close: close ?? { channel.close(mode: .all, promise: nil) })
        streams.withLock { $0[ObjectIdentifier(channel)] = stream }
        return stream
    }

    func remove(_ stream: Stream) {
        streams.withLock { streams in
            if streams[ObjectIdentifier(stream.channel)] === stream { streams[ObjectIdentifier(stream.channel)] = nil }
        }
    }

    /// The client closed its side of `channel` (see `InputClosedWatch`): its stream, if any, ends now
    /// rather than at the failed write of its next heartbeat.
    func inputClosed(on channel: any Channel) {
        streams.withLock { $0[ObjectIdentifier(channel)] }?.subscription.cancel()
    }

    var count: Int { streams.withLock { $0.count } }

    /// One round: heartbeats due by `now`, and writes in progress for longer than `writeLimit`.
    func sweep(now: ContinuousClock.Instant = .now, writeLimit: Duration) {
        let all = streams.withLock { Array($0.values) }
        for stream in all {
            if stream.watch.stalled(longerThan: writeLimit, now: now) {
                if stream.cutOff() { Self.stalledDisconnects[stream.transport]?.increment() }
            } else {
                stream.subscription.expireWait(ifDueBy: now)
            }
        }
    }

    func run() async throws {
        await repeatUntilShutdown(every: tick) { self.sweep(writeLimit: self.writeTimeout) }
        // On graceful shutdown every stream ends at its next step: a task's (`FeedController.follow`)
        // by its shutdown handler, a parked one (`ParkedSSEStream`, no task to tell) by its
        // subscription closing here. One still stuck in a write a second later is cut off, so
        // shutdown stays within its 5 s.
        for stream in streams.withLock({ Array($0.values) }) { stream.subscription.cancel() }
        while !Task.isCancelled, count > 0 {
            try? await Task.sleep(for: .milliseconds(250))
            sweep(writeLimit: .seconds(1))
        }
    }

    /// `stockroom_feed_stalled_disconnects_total` per transport, made once.
    static let stalledDisconnects: [FeedTransport: Counter] = Dictionary(
        uniqueKeysWithValues: FeedTransport.allCases.map {
            ($0, Counter(label: "stockroom_feed_stalled_disconnects_total", dimensions: [("transport", $0.rawValue)]))
        })
}

/// Each recent change's SSE frame, encoded once and shared by every subscriber's write (NIO writes
/// a shared `ByteBuffer` without copying it): a commit seen by 1,000 streams formats one frame.
/// Kept as a whole HTTP/1.1 chunk (`SIZE CRLF frame CRLF`), the frame a slice of it: a parked
/// stream writes the chunk as it is, one write past the HTTP encoder (whose chunk framing takes three
/// writes through the pipeline per change, per stream); a stream in a task writes the frame.
final class SSEFrames: Sendable {
    static let capacity = 4096

    private struct Slot {
        var seq: Int64 = -1
        var chunk = ByteBuffer()
    }

    private let slots = Mutex<[Slot]>(Array(repeating: Slot(), count: SSEFrames.capacity))
    let epoch: String

    init(epoch: String) {
        self.epoch = epoch
    }

    /// `id: CURSOR`, `event: change`, `data: CHANGE` and the blank line that ends the event.
    func frame(_ entry: ChangeEntry) -> ByteBuffer {
        Self.frame(ofChunk: chunk(entry))
    }

    /// The change's frame as one HTTP/1.1 chunk.
    func chunk(_ entry: ChangeEntry) -> ByteBuffer {
        let index = Int(entry.seq % Int64(Self.capacity))
        if let chunk = slots.withLock({ $0[index].seq == entry.seq ? $0[index].chunk : nil }) { return chunk }
        let chunk = Self.chunk(of: Self.encode(entry, epoch: epoch))
        slots.withLock { $0[index] = Slot(seq: entry.seq, chunk: chunk) }
        return chunk
    }

    static func encode(_ entry: ChangeEntry, epoch: String) -> ByteBuffer {
        let cursor = FeedCursor(epoch: epoch, seq: entry.seq).encoded
        var buffer = ByteBuffer()
        buffer.reserveCapacity(cursor.utf8.count + entry.json.utf8.count + 32)
        buffer.writeStaticString("id: ")
        buffer.writeString(cursor)
        buffer.writeStaticString("\nevent: change\ndata: ")
        buffer.writeString(entry.json)
        buffer.writeStaticString("\n\n")
        return buffer
    }

    /// The contract's `event: error` with the error's body, which ends a stream.
    static func errorEvent(_ error: APIError) -> ByteBuffer {
        ByteBuffer(string: "event: error\ndata: \(error.json())\n\n")
    }

    /// `body` framed as one HTTP/1.1 chunk: its size in hex, CRLF, the bytes, CRLF. Not for an empty body (that is the last chunk).
    static func chunk(of body: ByteBuffer) -> ByteBuffer {
        let size = String(body.readableBytes, radix: 16)
        var chunk = ByteBuffer()
        chunk.reserveCapacity(size.utf8.count + body.readableBytes + 4)
        chunk.writeString(size)
        chunk.writeStaticString("\r\n")
        chunk.writeImmutableBuffer(body)
        chunk.writeStaticString("\r\n")
        return chunk
    }

    /// The body inside a chunk made by `chunk(of:)`, sharing its storage.
    static func frame(ofChunk chunk: ByteBuffer) -> ByteBuffer {
        let header = chunk.readableBytesView.firstIndex(of: UInt8(ascii: "\n")).map { $0 - chunk.readerIndex + 1 } ?? 0
        return chunk.getSlice(at: chunk.readerIndex + header, length: chunk.readableBytes - header - 2) ?? ByteBuffer()
    }
}

/// Tells `onInputClosed` when the client closes its side of the connection. Hummingbird allows
/// half-closure, so NIO keeps such a channel open until a write to it fails: an idle feed stream
/// would hold its memory and its subscriber place until its next heartbeat.
final class InputClosedWatch: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    let onInputClosed: @Sendable (any Channel) -> Void

    init(onInputClosed: @escaping @Sendable (any Channel) -> Void) {
        self.onInputClosed = onInputClosed
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { onInputClosed(context.channel) }
        context.fireUserInboundEventTriggered(event)
    }
}
