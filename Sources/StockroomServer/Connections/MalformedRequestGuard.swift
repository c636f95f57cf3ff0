import NIOCore
import NIOHTTP1

/// Answers `400 invalidRequest` with the contract's body and closes when a request on the
/// connection does not parse (Hummingbird's own answer is a bare 400), closes a connection that has
/// not sent a request yet when the server shuts down, and sends `100 Continue` to a request that
/// asks for it (RFC 9110 §10.1.1: curl asks before a body over 1 MiB, a CSV import, and waits a
/// second for it).
///
/// It answers only when every request before the malformed one has its answer: it counts request
/// heads in and response ends out. A client that pipelined a malformed request behind one still
/// being answered gets Hummingbird's 400 after that answer instead, so answers never cross. A head
/// asking for an upgrade takes the guard out of the pipeline, which the upgrade then turns into a
/// WebSocket's; later requests on a connection whose upgrade was refused get Hummingbird's 400.
/// A malformed body of a request whose head parsed is the request's own error (its handler answers).
/// A `100 Continue` goes out as the head comes, or, behind requests still being answered, after
/// their answers: an interim answer never lands inside another request's.
final class MalformedRequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Request heads passed on, and response ends passed out: equal when every request is answered.
    private var requests = 0
    private var answers = 0
    private var closing = false
    /// The requests (by their number in `requests`) owed a `100 Continue` once those before them are answered.
    private var continuesOwed: [Int] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        requests += 1
        if Self.asksToContinue(head) {
            if answers == requests - 1 { writeContinue(context) } else { continuesOwed.append(requests) }
        }
        context.fireChannelRead(data)
        if head.headers.contains(name: "upgrade") {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        answers += 1
        context.write(data, promise: promise)
        if let next = continuesOwed.first, next == answers + 1 {
            continuesOwed.removeFirst()
            writeContinue(context)
        }
    }

    /// An HTTP/1.1 request with `Expect: 100-continue` and a body to come (a length over 0, or chunked).
    static func asksToContinue(_ head: HTTPRequestHead) -> Bool {
        // A GET or HEAD carries no body here: their heads (most of them) are not searched.
        guard head.method != .GET, head.method != .HEAD, head.version.major == 1, head.version.minor >= 1,
            head.headers.contains(name: "expect"),
            head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" })
        else { return false }
        if head.headers.contains(name: "transfer-encoding") { return true }
        return head.headers.first(name: "content-length").flatMap { Int($0) }.map { $0 > 0 } ?? false
    }

    private func writeContinue(_ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
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
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
