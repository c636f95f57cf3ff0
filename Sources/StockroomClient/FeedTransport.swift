/// How a ``ChangeFeed`` reaches the server. Every transport delivers the same changes, once each,
/// in commit order, resumes from its cursor after a drop, and takes a new snapshot after a `410`.
public enum FeedTransport: Hashable, Sendable {
    /// Server-Sent Events (`GET /v1/changes/stream`): one long response; a stream silent for longer
    /// than ``FeedOptions/heartbeatTimeout`` (the server sends a heartbeat every 15 s) is dropped.
    case serverSentEvents
    /// A WebSocket (`GET /v1/changes/ws`), one change per message. The server's refusals arrive as
    /// close codes (`4000 +` the HTTP status: 4401, 4403, 4410 and so on), read here as the same
    /// errors the other transports get; `1001` (the server shutting down) is a drop, and the feed
    /// reconnects. The client pings every half ``FeedOptions/heartbeatTimeout``; a ping without a
    /// pong by the next one drops the connection.
    case webSocket
    /// Long-polls (`GET /v1/changes?wait=`): one request at a time, each answered as soon as a
    /// change is there, or after `wait` with none, with up to `limit` changes. The wait is taken
    /// as at most 60 s and 5 s under the client's ``StockroomClient/requestTimeout``, the limit
    /// as 1 to 1,000. For networks that cut long responses. A long-poll does not mark its device
    /// online (``FeedOptions/clientID``): only a stream or a WebSocket does.
    case longPoll(wait: Duration = .seconds(20), limit: Int = 1_000)
}
