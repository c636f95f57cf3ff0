import NIOCore
import Synchronization

/// Tells `onInputClosed` when the client closes its side of the connection. Hummingbird allows
/// half-closure, so NIO keeps such a channel open until a write to it fails: an idle feed stream
/// would hold its memory and its subscriber place until its next heartbeat.
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

    /// For a request registered where `onInputClosed` finds it after the client may already have
    /// closed its side (a long-poll about to wait): tells `onInputClosed` again if it has.
    static func recheck(_ channel: any Channel) {
        channel.eventLoop.execute {
            guard let watch = try? channel.pipeline.syncOperations.handler(type: InputClosedWatch.self) else { return }
            if watch.closed.load(ordering: .relaxed) { watch.onInputClosed(channel) }
        }
    }
}
