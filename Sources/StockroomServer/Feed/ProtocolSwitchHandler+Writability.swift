import NIOCore

extension ProtocolSwitchHandler {
    /// Waits until `channel` takes writes again: NIO's buffer for it drained below its low-water
    /// mark, it closed, or `limit` passed, whichever comes first (the caller looks again: a stream
    /// ended meanwhile stops waiting within `limit`). A feed stream whose client reads slower than
    /// it writes waits here, and writes again as soon as the client has read, not a poll later.
    static func untilWritable(_ channel: any Channel, limit: TimeAmount = .milliseconds(20)) async throws {
        try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            guard let handler = try? channel.pipeline.syncOperations.handler(type: ProtocolSwitchHandler.self) else {
                // A pipeline without the handler (none the server builds): the limit alone.
                return channel.eventLoop.scheduleTask(in: limit) {}.futureResult
            }
            return handler.untilWritable(limit: limit, on: channel.eventLoop)
        }.get()
    }

    /// `untilWritable(_:limit:)` on the channel's event loop.
    func untilWritable(limit: TimeAmount, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard let context, context.channel.isActive, !context.channel.isWritable else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        writableWaiters.append(promise)
        let handler = NIOLoopBound(self, eventLoop: eventLoop)
        eventLoop.scheduleTask(in: limit) {
            handler.value.release(promise)
        }
        return promise.futureResult
    }

    /// Answers `promise` if it still waits (the limit of a wait the channel's writability ended first finds it gone).
    private func release(_ promise: EventLoopPromise<Void>) {
        guard let index = writableWaiters.firstIndex(where: { $0.futureResult === promise.futureResult }) else { return }
        writableWaiters.remove(at: index).succeed()
    }

    /// Answers every wait: the channel takes writes again, or has closed.
    func releaseWritableWaiters() {
        guard !writableWaiters.isEmpty else { return }
        let waiters = writableWaiters
        writableWaiters = []
        for waiter in waiters { waiter.succeed() }
    }
}
