import Metrics
import NIOCore
import ServiceLifecycle
import StockroomStorage
import Synchronization

/// The feed's open streams (SSE and WebSocket, and long-polls while they may wait, so that a
/// client's close ends them: `inputClosed`) and the one task that keeps time for all of them:
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
