import NIOCore
import Synchronization

/// Tells `onInputClosed` when the client closes its side of the connection. Hummingbird allows
/// half-closure, so NIO keeps such a channel open until a write to it fails: an idle feed stream
/// would hold its memory and its subscriber place until its next heartbeat. It tells it too when
/// the connection ends without that (a client's reset): a waiting long-poll, which writes nothing
/// until it answers, would otherwise hold its place until its `wait` ran out.
final class InputClosedWatch: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    let onInputClosed: @Sendable (any Channel) -> Void
    /// Whether the client has closed its side (set on the event loop).
    private let closed = Atomic<Bool>(false)

    init(onInputClosed: @escaping @Sendable (any Channel) -> Void) {
        self.onInputClosed = onInputClosed
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            closed.store(true, ordering: .relaxed)
            onInputClosed(context.channel)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !closed.exchange(true, ordering: .relaxed) { onInputClosed(context.channel) }
        context.fireChannelInactive()
    }

    /// For a request registered where `onInputClosed` finds it after the client may already have
    /// closed its side (a long-poll about to wait): tells `onInputClosed` again if it has, or if
    /// the connection has ended (its pipeline, this watch with it, is gone then).
    static func recheck(_ channel: any Channel, onInputClosed: @escaping @Sendable (any Channel) -> Void) {
        channel.eventLoop.execute {
            if let watch = try? channel.pipeline.syncOperations.handler(type: InputClosedWatch.self) {
                if watch.closed.load(ordering: .relaxed) { onInputClosed(channel) }
            } else if !channel.isActive {
                onInputClosed(channel)
            }
        }
    }
}
