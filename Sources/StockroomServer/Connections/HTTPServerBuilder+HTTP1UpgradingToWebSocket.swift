import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging

extension HTTPServerBuilder {
    /// HTTP/1.1 where any request can switch its connection to WebSocket (see `WebSocketUpgradingHTTPChannel`),
    /// with the connection cap, the first request's header timeout and an answer for any
    /// request that does not parse.
    static func http1UpgradingToWebSocket(
        router: Router<AppRequestContext>, webSocketPaths: Set<String>, connections: ConnectionSettings, streams: FeedStreams,
        logger: Logger
    ) -> HTTPServerBuilder {
        let webSocketResponder = router.buildResponder()
        // A text message that is not UTF-8 closes the WebSocket with 1007, as RFC 6455 says.
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: .seconds(Int64(connections.idleTimeout.components.seconds))), ws: .init(validateUTF8: true))
        let counter = ConnectionCounter(maximum: connections.maxConnections)
        return HTTPServerBuilder { responder in
            GuardedChildChannel(
                inner: WebSocketUpgradingHTTPChannel(
                    responder: responder, webSocketResponder: webSocketResponder, webSocketPaths: webSocketPaths,
                    configuration: configuration, logger: logger),
                headerTimeout: connections.headerTimeout, bodyTimeout: connections.bodyTimeout,
                bodyMinBytesPerSecond: connections.bodyMinBytesPerSecond, counter: counter, onInputClosed: streams.inputClosed)
        }
    }
}
