import NIOCore
import NIOHTTP1

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
