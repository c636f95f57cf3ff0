import NIOCore

/// Placed first in the pipeline of a connection over the cap: answers its first bytes with the
/// contract's `503 unavailable` and `Retry-After`, then closes; nothing reaches the application.
final class OverCapacityResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let response: String = {
        let body = APIError(.unavailable, "too many connections; retry later").json()
        return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body
    }()

    private var answered = false
    private var timer: Scheduled<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        // A client that sends nothing is not waited for.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .seconds(2)) { loopBound.value.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        answered = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: Self.response))).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
    }
}
