import NIOCore
import NIOHTTP1

/// Closes a connection whose first request head has not fully arrived `timeout` after it opened
/// (one that never sends, or stops in the middle of its headers). Later requests are Hummingbird's
/// (its idle timeout); until the first head, the upgrade pipeline has no idle timer of its own.
/// It sits right after the HTTP decoder, so its first read is always the first request's head.
final class FirstRequestTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart

    private let timeout: Duration
    private var timer: Scheduled<Void>?

    init(timeout: Duration) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000)) {
            loopBound.value.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        // The head arrived: out of the pipeline (which cancels the timer), so that later requests
        // do not pass through it.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
