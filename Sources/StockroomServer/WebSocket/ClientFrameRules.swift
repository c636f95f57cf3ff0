import NIOCore
import NIOWebSocket

/// Closes a WebSocket whose client sends a frame that is not masked, or that has a reserved bit
/// set, with 1002 (protocol error): RFC 6455 has every client frame masked (5.1), and no extension
/// is negotiated here, so every reserved bit is 0 (5.2); a server closes the connection on a frame
/// that breaks either. WSCore checks the reserved bits of data and close frames only, not of a ping
/// or a pong. Later frames are dropped.
final class ClientFrameRules: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil, !frame.rsv1, !frame.rsv2, !frame.rsv3 else {
            refused = true
            var code = context.channel.allocator.buffer(capacity: 2)
            code.write(webSocketErrorCode: .protocolError)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)))
                .whenComplete { [context] _ in context.close(promise: nil) }
            return
        }
        context.fireChannelRead(data)
    }
}
