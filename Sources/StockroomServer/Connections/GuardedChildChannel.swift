import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Wraps a child channel and adds `MalformedRequestGuard` and `FirstRequestTimeout` right after
/// its HTTP decoder, where they see the request parts before anything else does, and
/// `InputClosedWatch` first of all.
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner
    let headerTimeout: Duration
    /// A request's body has this long to arrive, plus a second for every `bodyMinBytesPerSecond` bytes it sent.
    let bodyTimeout: Duration
    let bodyMinBytesPerSecond: Int
    let counter: ConnectionCounter
    /// Told when a client closes its side of the connection.
    let onInputClosed: @Sendable (any Channel) -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        let admitted = counter.admit(channel)
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(InputClosedWatch(onInputClosed: onInputClosed), position: .first)
            if !admitted { try pipeline.addHandler(OverCapacityResponder(), position: .first) }
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(MalformedRequestGuard(bodyTimeout: bodyTimeout, bodyMinBytesPerSecond: bodyMinBytesPerSecond), position: .after(decoder))
            try pipeline.addHandler(FirstRequestTimeout(timeout: headerTimeout), position: .after(decoder))
            return value
        }
    }

    func handle(value: Inner.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
