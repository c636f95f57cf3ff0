import NIOCore

/// The last handler before a switched connection's WebSocket frame stream: takes the frames from
/// `ProtocolSwitchHandler` and routes the stream's writes, reads and close back to it. Before the
/// switch it only drops what the HTTP request stream passes on.
final class WebSocketTailHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias OutboundIn = Any

    private var context: ChannelHandlerContext?
    private var head: ProtocolSwitchHandler?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.head = nil
    }

    func switched(to head: ProtocolSwitchHandler) { self.head = head }
    func deliver(_ data: NIOAny) { context?.fireChannelRead(data) }
    func deliverReadComplete() { context?.fireChannelReadComplete() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // HTTP parts the request stream has already taken (it passes reads on): nothing after it wants them.
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let head { head.write(data, promise: promise) } else { context.write(data, promise: promise) }
    }

    func flush(context: ChannelHandlerContext) {
        if let head { head.flush() } else { context.flush() }
    }

    func read(context: ChannelHandlerContext) {
        // The HTTP request stream, paused with a part nobody will read, would hold the frames' reads back.
        if let head { head.read() } else { context.read() }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if let head { head.close(mode: mode, promise: promise) } else { context.close(mode: mode, promise: promise) }
    }
}
