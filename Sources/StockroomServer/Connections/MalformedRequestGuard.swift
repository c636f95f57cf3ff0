import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1

extension HTTPServerBuilder {
    /// HTTP/1.1 where any request can switch its connection to WebSocket (see `WebSocketUpgradingHTTPChannel`),
    /// with the connection cap, the first request's header timeout and an answer for any
    /// request that does not parse.
    static func http1UpgradingToWebSocket(
        router: Router<AppRequestContext>, webSocketPaths: Set<String>, connections: ConnectionSettings, streams: FeedStreams,
        logger: Logger
    ) -> HTTPServerBuilder {
        let webSocketResponder = router.buildResponder()
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: .seconds(Int64(connections.idleTimeout.components.seconds))))
        let counter = ConnectionCounter(maximum: connections.maxConnections)
        return HTTPServerBuilder { responder in
            GuardedChildChannel(
                inner: WebSocketUpgradingHTTPChannel(
                    responder: responder, webSocketResponder: webSocketResponder, webSocketPaths: webSocketPaths,
                    configuration: configuration, logger: logger),
                headerTimeout: connections.headerTimeout, counter: counter, onInputClosed: streams.inputClosed)
        }
    }
}

/// Wraps a child channel and adds `MalformedRequestGuard` and `FirstRequestTimeout` right after
/// its HTTP decoder, where they see the request parts before anything else does, and
/// `InputClosedWatch` first of all.
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner
    let headerTimeout: Duration
    let counter: ConnectionCounter
    /// Told when a client closes its side of the connection.
    let onInputClosed: @Sendable (any Channel) -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        let admitted = counter.admit(channel)
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(InputClosedWatch(onInputClosed: onInputClosed), position: .first)
            if !admitted { try pipeline.addHandler(OverCapacityResponder(), position: .first) }
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(MalformedRequestGuard(), position: .after(decoder))
            try pipeline.addHandler(FirstRequestTimeout(timeout: headerTimeout), position: .after(decoder))
            return value
        }
    }

    func handle(value: Inner.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Closes a connection whose first request head has not fully arrived `timeout` after it opened
/// (one that never sends, or stops in the middle of its headers). Later requests are Hummingbird's
/// (its idle timeout); until the first head, the upgrade pipeline has no idle timer of its own.
/// It sits right after the HTTP decoder, so its first read is always the first request's head.
final class FirstRequestTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart

    private let timeout: Duration
    private var timer: Scheduled<Void>?

    init(timeout: Duration) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000)) {
            loopBound.value.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        // The head arrived: out of the pipeline (which cancels the timer), so that later requests
        // do not pass through it.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// Answers `400 invalidRequest` with the contract's body and closes when a request on the
/// connection does not parse (Hummingbird's own answer is a bare 400), and closes a connection
/// that has not sent a request yet when the server shuts down.
///
/// It answers only when every request before the malformed one has its answer: it counts request
/// heads in and response ends out. A client that pipelined a malformed request behind one still
/// being answered gets Hummingbird's 400 after that answer instead, so answers never cross. A head
/// asking for an upgrade takes the guard out of the pipeline, which the upgrade then turns into a
/// WebSocket's; later requests on a connection whose upgrade was refused get Hummingbird's 400.
/// A malformed body of a request whose head parsed is the request's own error (its handler answers).
final class MalformedRequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Request heads passed on, and response ends passed out: equal when every request is answered.
    private var requests = 0
    private var answers = 0
    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        requests += 1
        context.fireChannelRead(data)
        if head.headers.contains(name: "upgrade") {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { answers += 1 }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, requests == 0, !closing {
            closing = true
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing, error is HTTPParserError, requests == answers else {
            context.fireErrorCaught(error)
            return
        }
        closing = true
        let body = ByteBuffer(string: APIError(.invalidRequest, "the request is not valid HTTP/1.1").json())
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
