import NIOCore

/// Tells `onInputClosed` when the client closes its side of the connection. Hummingbird allows
/// half-closure, so NIO keeps such a channel open until a write to it fails: an idle feed stream
/// would hold its memory and its subscriber place until its next heartbeat.
final class InputClosedWatch: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    let onInputClosed: @Sendable (any Channel) -> Void

    init(onInputClosed: @escaping @Sendable (any Channel) -> Void) {
        self.onInputClosed = onInputClosed
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { onInputClosed(context.channel) }
        context.fireUserInboundEventTriggered(event)
    }
}
