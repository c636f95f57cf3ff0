import NIOCore
import Synchronization

/// A response whose connection `ProtocolSwitchHandler` has taken over (see `park(channel:)`): its
/// body is written from the handler, on the channel's event loop, by whoever holds this.
struct ParkedResponse: Sendable {
    let handler: NIOLoopBound<ProtocolSwitchHandler>
    let channel: any Channel
    private let order: InOrderOnLoop

    init(handler: NIOLoopBound<ProtocolSwitchHandler>, channel: any Channel) {
        self.handler = handler
        self.channel = channel
        self.order = InOrderOnLoop(channel.eventLoop)
    }

    /// Writes and flushes HTTP/1.1 chunks (`SSEFrames.chunk(of:)`), in order with every earlier write of the response.
    func write(chunks: [ByteBuffer]) {
        // Once per delivery, mostly on the loop already: no closure to allocate then.
        if order.runsInPlace {
            handler.value.writeParkedChunks(chunks)
        } else {
            onLoop { $0.writeParkedChunks(chunks) }
        }
    }
    /// Ends the response and closes the connection.
    func end() { onLoop { $0.endParked() } }
    /// Closes the connection at once.
    func close() { onLoop { $0.closeParked() } }

    private func onLoop(_ body: @escaping @Sendable (ProtocolSwitchHandler) -> Void) {
        let handler = self.handler
        order.run { body(handler.value) }
    }
}

/// Work for one event loop, run in the order it was asked for, from whichever thread asked.
///
/// Work asked for off the loop is queued there (`execute`, which NIO runs first in, first out). Work
/// asked for on the loop runs in place only when none of that is still queued: NIO takes its queued
/// tasks in batches, and a task of the batch in progress (a `LoopDeliveries` wake-up, say) would
/// otherwise run its work ahead of work queued from another thread after the batch was taken. A
/// stream whose round ran in a task off the loop, then was woken on it, wrote its changes out of
/// order that way.
final class InOrderOnLoop: Sendable {
    private let loop: any EventLoop
    /// Work queued on the loop and not yet run there.
    private let queued = Atomic<Int>(0)

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    /// Whether work asked for now may run in place: on the loop, with nothing queued ahead of it.
    var runsInPlace: Bool {
        loop.inEventLoop && queued.load(ordering: .acquiring) == 0
    }

    /// Runs `body` on the loop after everything asked for before it.
    func run(_ body: @escaping @Sendable () -> Void) {
        if runsInPlace { body() } else { queue(body) }
    }

    /// Queues `body` on the loop behind everything asked for before it (for a caller that has
    /// checked `runsInPlace` itself).
    func queue(_ body: @escaping @Sendable () -> Void) {
        queued.add(1, ordering: .releasing)
        loop.execute { [self] in
            body()
            queued.subtract(1, ordering: .releasing)
        }
    }
}
