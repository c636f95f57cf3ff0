import NIOCore

/// Closes a WebSocket's connection without resetting it, so that its client reads the close frame.
///
/// A close that leaves the client's bytes unread makes the kernel answer with a reset, and a
/// client still sending (the rest of a message over the 16 KiB limit, closed with 1009) gets the
/// reset instead of the close frame before it. Sitting ahead of the frame codec, this handler turns
/// a full close into the end of the output, after the frames already written (the close frame among
/// them), and then reads and drops what the client still sends until it closes its side, or for
/// `limit` at most, as `MalformedRequestGuard` does for a refused HTTP request. Later closes join
/// the first; `limit` bounds them all, an output that never drains (a client that stopped reading)
/// included.
final class LingeringClose: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = IOData

    private let limit: TimeAmount
    private var lingering = false

    init(limit: TimeAmount = MalformedRequestGuard.lingerLimit) { self.limit = limit }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all, context.channel.isActive else {
            context.close(mode: mode, promise: promise)
            return
        }
        // Later closes (the WebSocket's stream ending after its close frame, the HTTP loop's) join
        // this one: the connection closes when the lingering ends.
        if let promise { context.channel.closeFuture.cascade(to: promise) }
        guard !lingering else { return }
        lingering = true
        // The limit runs from now: an output that never drains (a client that stopped reading,
        // cut off for it) closes at the limit too.
        context.eventLoop.assumeIsolated().scheduleTask(in: limit) { context.close(promise: nil) }
        context.close(mode: .output).assumeIsolated().whenComplete { result in
            guard case .success = result else {
                context.close(promise: nil)
                return
            }
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !lingering else { return }  // what the client still sends after the close: dropped
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard !lingering else {
            context.read()  // on to the client's end
            return
        }
        context.fireChannelReadComplete()
    }
}
