import HTTPTypes
import Hummingbird
import Metrics
import StockroomStorage

/// `/v1/changes`, `/v1/changes/stream`, `/v1/changes/ws` and `/v1/snapshot`: following committed
/// changes; and `/v1/items/export`, the items at one cursor as CSV.
struct FeedController {
    let database: any Storage
    let settings: FeedSettings
    let limits: SubscriberLimits
    /// Snapshots and exports streaming, each holding a read of the store.
    let snapshotLimits: SubscriberLimits
    /// Cross-origin pages allowed to open the WebSocket (`http.corsAllowedOrigins`); a page of this server's own origin always may.
    let allowedOrigins: Set<String>
    /// The open streams, whose heartbeats and write timeouts one sweep keeps.
    let streams: FeedStreams
    /// Each change's SSE frame, encoded once for every stream.
    let frames: SSEFrames
    /// The devices whose feed is open here (`clientID=`).
    let presence: PresenceTracker

    init(
        database: any Storage, settings: FeedSettings, streams: FeedStreams, presence: PresenceTracker = PresenceTracker(),
        allowedOrigins: Set<String> = []
    ) {
        self.database = database
        self.presence = presence
        self.settings = settings
        self.limits = SubscriberLimits(maxTotal: settings.maxSubscribers, maxPerToken: settings.maxSubscribersPerToken)
        self.snapshotLimits = SubscriberLimits(
            .snapshots, maxTotal: min(settings.maxSnapshots, database.maximumStreamedReads), maxPerToken: settings.maxSnapshotsPerToken)
        self.streams = streams
        self.frames = SSEFrames(epoch: database.epoch)
        self.allowedOrigins = allowedOrigins
    }

    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// The WebSocket route.
    static let webSocketPath = "/v1/changes/ws"
    /// The routes that accept `?access_token=`.
    static let streamingPaths: Set<String> = ["/v1/changes/stream", webSocketPath]

    func addRoutes(to group: RouterGroup<CallerContext>) {
        group.get("changes", use: batch)
        group.get("changes/stream", use: stream)
        group.get("snapshot", use: snapshot)
        group.get("items/export", use: export)
        group.get("changes/ws", use: webSocketRequest)
    }

    /// What a request or stream whose token was revoked while it waited ends with: 401 for a
    /// long-poll, the SSE `error` event, the WebSocket's 4401 close.
    static let revoked = APIError.unauthorized("the token was revoked")

    static let subscribers = SubscriberGauges()

    /// Makes the feed's metrics now, each series of each transport, so that `/metrics` shows
    /// them at 0 from the start rather than from their first event (the server calls it at startup).
    static func registerMetrics() {
        _ = (subscribers, sentCounters, FeedStreams.stalledDisconnects, SubscriberLimits.Kind.subscribers, SubscriberLimits.Kind.snapshots, snapshotStreams)
    }

    static func sent(_ count: Int, transport: FeedTransport) {
        guard count > 0 else { return }
        sentCounters[transport].increment(by: count)
    }

    /// `stockroom_feed_changes_sent_total` per transport, made once.
    static let sentCounters = SentCounters()

    /// One counter per transport, picked by a switch: `sent` runs once per delivery, where a
    /// dictionary's hashing cost more than the increment.
    struct SentCounters: Sendable {
        let longPoll = Self.counter(.longPoll)
        let sse = Self.counter(.sse)
        let webSocket = Self.counter(.webSocket)

        subscript(transport: FeedTransport) -> Counter {
            switch transport {
            case .longPoll: longPoll
            case .sse: sse
            case .webSocket: webSocket
            }
        }

        private static func counter(_ transport: FeedTransport) -> Counter {
            Counter(label: "stockroom_feed_changes_sent_total", dimensions: [("transport", transport.rawValue)])
        }
    }
}
