import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import StockroomCore
import StockroomWire
import StockroomStorage

/// `/v1/changes`, `/v1/changes/stream`, `/v1/changes/ws` and `/v1/snapshot`: following committed changes.
struct FeedController {
    let database: any Storage
    let settings: FeedSettings
    let limits: SubscriberLimits
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
        group.get("changes/ws", use: webSocketRequest)
    }

    @Sendable func batch(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let rawLimit = try request.intQuery("limit")
        let rawWait = try request.intQuery("wait")
        let filter = try filter(request, user: caller.user)
        let from = try start(of: request)
        let limit = try APIError.checked("limit", rawLimit, default: 100, in: 1...1000)
        let wait = try APIError.checked("wait", rawWait, default: 0, in: 0...60)
        let device = try await device(of: request, user: caller.user)
        let start = Subscription(filter: filter, seq: try await database.resolve(from))
        let lease = try limits.acquire(token: caller.id)
        defer { lease.release() }
        let hold = device.map { presence.open($0, user: caller.user) }
        defer { hold?.release() }
        let subscription = database.hub.subscribe(start.filter)
        Self.subscribers.increment(transport: .longPoll)
        defer {
            subscription.cancel()
            Self.subscribers.decrement(transport: .longPoll)
        }
        let token = TokenCheck(database: database, tokenID: caller.id)
        var page = try await database.readEncodedChanges(after: start.seq, filter: start.filter, limit: limit)
        let deadline = ContinuousClock.now.advanced(by: .seconds(wait))
        // On graceful shutdown the wait ends at once (the subscription closes) and the poll is
        // answered with its batch so far, possibly empty, and its cursor: shutdown waits for no poll.
        var waited = false
        try await withGracefulShutdownHandler {
            while page.count == 0, ContinuousClock.now < deadline {
                waited = true
                let woke = await subscription.wait(timeout: deadline - ContinuousClock.now)
                if Task.isCancelled || Task.isShuttingDownGracefully || subscription.isClosed { break }
                guard try await token.isLive() else { throw Self.revoked }
                if woke || ContinuousClock.now >= deadline {
                    page = try await database.readEncodedChanges(after: page.cursor.seq, filter: start.filter, limit: limit)
                }
            }
        } onGracefulShutdown: {
            subscription.cancel()
        }
        // A token revoked while the request waited gets 401, never the changes. A poll that did
        // not wait answers with what it read right after authenticating: no second token read.
        if waited {
            guard try await token.isLive() else { throw Self.revoked }
        }
        Self.sent(page.count, transport: .longPoll)
        // Each change's value is spliced in as stored, not decoded and encoded again.
        var body = ByteBuffer()
        body.reserveCapacity(page.changesJSON.count + 160)
        body.writeStaticString(FeedBatchJSON.opening)
        body.writeBytes(page.changesJSON)
        body.writeBytes(FeedBatchJSON.closing(cursor: page.cursor, hasMore: page.hasMore))
        return Reply(status: .ok, headers: [.contentType: Reply.jsonContentType], body: body).response
    }

    @Sendable func snapshot(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let pipe = database.streamSnapshot(user: caller.user, depth: 4, stallTimeout: settings.writeTimeout)
        // Whoever drops the response without running its body (a connection closed first) still ends the read.
        let owner = PipeOwner(pipe)
        // The first chunk comes once the read transaction holds: a storage failure is still a status.
        let first: [UInt8]
        do {
            first = try await pipe.next() ?? []
        } catch {
            pipe.cancel()
            throw error
        }
        let writeTimeout = settings.writeTimeout
        let channel = context.channel
        let logger = context.logger
        return Response(
            status: .ok,
            headers: [.contentType: Reply.jsonContentType, .cacheControl: "no-store"],
            body: ResponseBody { writer in
                Self.snapshotStreams.add(1)
                defer {
                    Self.snapshotStreams.add(-1)
                    owner.pipe.cancel()
                }
                let box = BodyWriterBox(writer)
                do {
                    var chunk: [UInt8]? = first
                    while let bytes = chunk {
                        // A client that stops reading is cut off after the write timeout, like a feed subscriber.
                        try await Self.withDeadline(writeTimeout) { try await box.write(ByteBuffer(bytes: bytes)) }
                        chunk = try await owner.pipe.next()
                    }
                } catch {
                    logger.debug("snapshot stream ended early", metadata: ["reason": "\(error)"])
                    // Headers are out: the only honest end is a cut connection, which no client takes for a whole body.
                    channel.close(mode: .all, promise: nil)
                    throw error
                }
                try await Self.withDeadline(writeTimeout) { try await box.finish() }
            }
        )
    }

    /// Snapshots being streamed now (each holds a read transaction).
    static let snapshotStreams = CountGauge(label: "stockroom_snapshot_streams")

    @Sendable func stream(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        // The device first: a malformed clientID is a bad request whatever the cursor.
        let device = try await device(of: request, user: caller.user)
        let start = try await parse(request, user: caller.user, lastEventID: request.headers[Self.lastEventID])
        let lease = try limits.acquire(token: caller.id)
        let presence = self.presence
        let database = self.database
        let settings = self.settings
        let streams = self.streams
        let frames = self.frames
        let logger = context.logger
        let channel = context.channel
        return Response(
            status: .ok,
            // The connection ends with the stream: a parked stream has no HTTP loop left to read a next request.
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .connection: "close"],
            body: ResponseBody { writer in
                let parked: ParkedResponse?
                do {
                    parked = try await ProtocolSwitchHandler.park(channel: channel)
                } catch {
                    lease.release()
                    throw error
                }
                if let parked {
                    Self.subscribers.increment(transport: .sse)
                    let hold = device.map { presence.open($0, user: caller.user) }
                    await ParkedSSEStream.start(
                        database: database, streams: streams, frames: frames, settings: settings, start: start, tokenID: caller.id,
                        response: parked, logger: logger
                    ) {
                        Self.subscribers.decrement(transport: .sse)
                        hold?.release()
                        lease.release()
                    }
                    // The stream goes on without this task; Hummingbird's connection task ends.
                    throw StreamDetached(channel: channel)
                }
                // Every connection of the server's pipeline has the parking handler (buildApplication
                // puts it there); one without it (an in-process router) cannot serve the stream.
                lease.release()
                throw NoParkingHandler()
            }
        )
    }

    /// An SSE stream asked for on a connection without `ProtocolSwitchHandler`: only a pipeline
    /// other than the server's has none (HummingbirdTesting's in-process router); test the stream
    /// against a live server.
    struct NoParkingHandler: Error {}

    /// Runs `operation`, cancelling it and throwing `WriteTimeout` when it outlasts `timeout`.
    static func withDeadline(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await operation()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let finished = try await group.next() ?? false
            group.cancelAll()
            guard finished else { throw WriteTimeout() }
        }
    }

    /// Checked before upgrading, in the contract's order, so that a refusal (a close code after the
    /// upgrade, or the plain error without upgrade headers) says what is wrong; without upgrade
    /// headers a valid request is `426`.
    @Sendable func webSocketRequest(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        // A WebSocket is not subject to CORS, so a browser's Origin (http or https; other clients
        // send other schemes, or none) is checked here: a page of another origin gets no more
        // from the WebSocket than it could from fetch or EventSource.
        if let origin = request.headers[.origin], Self.isWebOrigin(origin), !allowedOrigins.contains(origin),
            !Self.isSameOrigin(origin, host: request.head.authority)
        {
            throw APIError.forbidden("a page from \(origin) may not open this WebSocket; the origin is not in http.corsAllowedOrigins")
        }
        let device = try await device(of: request, user: caller.user)
        let start = try await parse(request, user: caller.user, lastEventID: nil)
        guard let upgrade = context.webSocketUpgrade else {
            var error = APIError(.upgradeRequired, "this route speaks WebSocket only")
            error.headers[.upgrade] = "websocket"
            throw error
        }
        let database = self.database
        let settings = self.settings
        let limits = self.limits
        let streams = self.streams
        let tokenID = caller.id
        let presence = self.presence
        let user = caller.user
        upgrade.accept { inbound, outbound, session in
            // Taken once upgraded, so that a handshake that fails after this route cannot leak it;
            // over a cap the WebSocket closes with 4503 and the error body.
            let lease: SubscriberLimits.Lease
            do {
                lease = try limits.acquire(token: tokenID)
            } catch {
                try await WebSocketUpgrade.close(outbound, with: APIError(error))
                return
            }
            defer { lease.release() }
            let hold = device.map { presence.open($0, user: user) }
            defer { hold?.release() }
            try await Self.webSocket(
                database: database, streams: streams, settings: settings, start: start, tokenID: tokenID, inbound: inbound, outbound: outbound, session: session)
        }
        return Response(status: .switchingProtocols)
    }

    /// Whether `origin` is a web page's (`http://` or `https://`), as browsers send it.
    static func isWebOrigin(_ origin: String) -> Bool {
        let lowered = origin.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// Whether `origin` is this server as the request addressed it (`http://` or `https://` and the `Host`).
    static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, !host.isEmpty else { return false }
        return origin.lowercased() == "http://\(host.lowercased())" || origin.lowercased() == "https://\(host.lowercased())"
    }

    /// What a request or stream whose token was revoked while it waited ends with: 401 for a
    /// long-poll, the SSE `error` event, the WebSocket's 4401 close.
    static let revoked = APIError.unauthorized("the token was revoked")

    /// Where the request starts: `Last-Event-ID` wins over `since`; none means the beginning of the log.
    /// Both are checked even when `Last-Event-ID` wins: a malformed `since` is a bad request either way.
    func start(of request: Request, lastEventID: String? = nil) throws -> FeedStart {
        let since = try request.query("since").map { try Self.parseStart($0, field: "since") }
        if let lastEventID { return try Self.parseStart(lastEventID, field: "Last-Event-ID") }
        return since ?? .beginning
    }

    static func parseStart(_ raw: String, field: String) throws -> FeedStart {
        if raw == "now" { return .now }
        if raw == "oldest" { return .oldest }
        guard let cursor = FeedCursor(encoded: raw) else { throw APIError.invalidParameter(field, "not a valid feed cursor") }
        return .after(cursor)
    }

    func filter(_ request: Request, user: UserID) throws -> FeedFilter {
        guard let raw = request.query("topics") else { return FeedFilter(user: user, topics: [.item, .navigation]) }
        var topics = Set<ChangeEntity>()
        for name in raw.split(separator: ",", omittingEmptySubsequences: false) {
            guard let topic = Topic(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw APIError.invalidParameter("topics", "topics must be a comma-separated list of items, navigation and presence")
            }
            topics.insert(topic.entity)
        }
        return FeedFilter(user: user, topics: topics)
    }

    /// The device a feed request names (`clientID=`), which it marks online while open; `400` when
    /// malformed, `404` when it is another user's.
    func device(of request: Request, user: UserID) async throws -> ClientID? {
        guard let raw = request.query("clientID") else { return nil }
        guard let clientID = ClientID(raw) else { throw APIError.invalidParameter("clientID", ClientID.rule) }
        _ = try await database.navigation(clientID: clientID, user: user)
        presence.seen(clientID, user: user)
        return clientID
    }

    func parse(_ request: Request, user: UserID, lastEventID: String?) async throws -> Subscription {
        let filter = try filter(request, user: user)
        let start = try start(of: request, lastEventID: lastEventID)
        return Subscription(filter: filter, seq: try await database.resolve(start))
    }

    static let subscribers = SubscriberGauges()

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
