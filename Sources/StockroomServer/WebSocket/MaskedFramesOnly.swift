import NIOCore
import NIOWebSocket

/// Closes a WebSocket whose client sends a frame that is not masked, with 1002 (protocol error):
/// RFC 6455 (5.1) has every client frame masked, and a server close the connection on one that is
/// not. Later frames are dropped.
final class MaskedFramesOnly: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard unwrapInboundIn(data).maskKey != nil else {
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
