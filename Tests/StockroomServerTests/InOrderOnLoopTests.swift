import Dispatch
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import StockroomServer

/// Work for an event loop runs in the order it was asked for, from the loop or from another thread,
/// on a real loop whose queued tasks NIO takes in batches.
@Suite("Work for an event loop, in the order asked for")
struct InOrderOnLoopTests {
    final class Ran: Sendable {
        private let names = Mutex<[String]>([])
        func append(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    /// A group of one real event loop, the work for it, and the record of what ran.
    static func oneLoop() -> (MultiThreadedEventLoopGroup, any EventLoop, InOrderOnLoop, Ran) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        return (group, loop, InOrderOnLoop(loop), Ran())
    }

    /// A task already running on the loop asks for work after another thread has queued some (a
    /// stream's round off the loop wrote a change; its next wake-up, on the loop, writes the next):
    /// the queued work runs first.
    @Test(.timeLimit(.minutes(10)))
    func workAskedForOnTheLoopRunsAfterWorkQueuedBeforeIt() async throws {
        let (group, loop, order, ran) = Self.oneLoop()
        let queuedElsewhere = DispatchSemaphore(value: 0)
        let onLoop = loop.submit {
            queuedElsewhere.wait()
            let inPlace = order.runsInPlace
            order.run { ran.append("asked for on the loop") }
            return inPlace
        }
        order.run { ran.append("queued from another thread") }
        queuedElsewhere.signal()
        #expect(try await onLoop.get() == false)
        #expect(try await loop.submit { order.runsInPlace }.get(), "once the queued work has run")
        try await group.shutdownGracefully()
        #expect(ran.all == ["queued from another thread", "asked for on the loop"])
    }

    /// On the loop with nothing queued, work runs in place, before the call returns.
    @Test(.timeLimit(.minutes(10)))
    func workOnTheLoopWithNothingQueuedRunsInPlace() async throws {
        let (group, loop, order, ran) = Self.oneLoop()
        try await loop.submit {
            order.run { ran.append("in place") }
            ran.append("after the call")
        }.get()
        try await group.shutdownGracefully()
        #expect(ran.all == ["in place", "after the call"])
    }
}
