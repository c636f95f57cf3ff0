import HTTPTypes
import Hummingbird
import HummingbirdWebSocket

/// `GET /v1/changes/ws`: the handshake's checks, then the upgrade to `webSocket(…)`.
extension FeedController {
    /// Checked before upgrading, in the contract's order, so that a refusal (a close code after the
    /// upgrade, or a plain error when there is no upgrade to make) says what is wrong: the origin,
    /// then the request's own shape (`426` without upgrade headers, the handshake's error), then
    /// its parameters.
    @Sendable func webSocketRequest(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        // A WebSocket is not subject to CORS, so a browser's Origin (http or https, or `null` from a
        // sandboxed frame, a `data:` or a `file:` page, or `file://`; other clients send other
        // schemes, or none)
        // is checked here: a page of another origin gets no more from the WebSocket than it could
        // from fetch or EventSource.
        if let origin = request.headers[.origin], Self.isWebOrigin(origin), !allowedOrigins.contains(origin),
            !Self.isSameOrigin(origin, host: request.head.authority)
        {
            throw APIError.forbidden("a page from \(origin) may not open this WebSocket; the origin is not in http.corsAllowedOrigins")
        }
        // The request's own shape before its parameters: a request that does not ask to upgrade,
        // or whose handshake cannot be finished, is told so whatever its cursor or filter says.
        guard let upgrade = context.webSocketUpgrade else {
            var error = APIError(.upgradeRequired, "this route speaks WebSocket only")
            error.headers[.upgrade] = "websocket"
            throw error
        }
        if WebSocketUpgrade.acceptValue(request.head) == nil { throw WebSocketUpgrade.handshakeError(request.head) }
        let (device, start) = try await parse(request, user: caller.user, lastEventID: nil)
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
            let hold = FeedHold(lease: lease, device: device, user: user, presence: presence, transport: .webSocket)
            defer { hold.release() }
            try await Self.webSocket(
                database: database, streams: streams, settings: settings, start: start, tokenID: tokenID, inbound: inbound, outbound: outbound, session: session)
        }
        return Response(status: .switchingProtocols)
    }

    /// Whether `origin` is a web page's as browsers send it: `http://` or `https://`, or `null`, the
    /// opaque origin of a sandboxed frame, a `data:` or a `file:` page (which any site can embed, so
    /// it is never this server, and never allowed: CORS does not answer it either), or `file://`,
    /// as some browsers send a local page's.
    static func isWebOrigin(_ origin: String) -> Bool {
        let lowered = origin.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || lowered == "null" || lowered.hasPrefix("file:")
    }

    /// Whether `origin` is this server as the request addressed it (`http://` or `https://` and the `Host`).
    static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, !host.isEmpty else { return false }
        return origin.lowercased() == "http://\(host.lowercased())" || origin.lowercased() == "https://\(host.lowercased())"
    }
}
