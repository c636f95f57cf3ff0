import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import StockroomServer

/// A feed stream whose socket is full waits in `ProtocolSwitchHandler.untilWritable` until the
/// channel takes writes again, closes, or the wait's limit passes: whichever comes first ends it,
/// once.
@Suite("Waiting for a full socket to drain")
struct WritabilityWaitTests {
    /// An active channel with the handler, its writability as given.
    static func channel(writable: Bool) throws -> (EmbeddedChannel, ProtocolSwitchHandler) {
        let channel = EmbeddedChannel()
        let handler = ProtocolSwitchHandler(
            encoder: HTTPResponseEncoder(), decoder: ByteToMessageHandler(HTTPRequestDecoder()), tail: WebSocketTailHandler())
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.isWritable = writable
        return (channel, handler)
    }

    /// Whether a wait has ended (its future completes on the embedded loop, in the call that ends it).
    final class Wait: Sendable {
        private let done = Mutex(0)
        init(_ future: EventLoopFuture<Void>) {
            future.whenComplete { [self] _ in done.withLock { $0 += 1 } }
        }
        /// Ended, once.
        var isFulfilled: Bool {
            let count = done.withLock { $0 }
            #expect(count <= 1)
            return count == 1
        }
    }

    @Test func aWritableChannelDoesNotWait() throws {
        let (channel, handler) = try Self.channel(writable: true)
        #expect(Wait(handler.untilWritable(limit: .hours(1), on: channel.eventLoop)).isFulfilled)
        _ = try channel.finish()
    }

    @Test func theWaitEndsWhenTheChannelTakesWritesAgainAndItsLimitThenFindsNothing() throws {
        let (channel, handler) = try Self.channel(writable: false)
        let waits = (0..<3).map { _ in Wait(handler.untilWritable(limit: .hours(1), on: channel.eventLoop)) }
        channel.embeddedEventLoop.advanceTime(by: .minutes(59))
        #expect(waits.filter(\.isFulfilled).isEmpty)
        // Still full: a change of writability that leaves it unwritable ends nothing.
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(waits.filter(\.isFulfilled).isEmpty)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(waits.filter(\.isFulfilled).count == waits.count)
        #expect(handler.writableWaiters.isEmpty)
        // The limits come due with nothing left to answer.
        channel.embeddedEventLoop.advanceTime(by: .hours(2))
        #expect(waits.filter(\.isFulfilled).count == waits.count)
        _ = try channel.finish()
    }

    @Test func theWaitEndsAtItsLimit() throws {
        let (channel, handler) = try Self.channel(writable: false)
        let short = Wait(handler.untilWritable(limit: .milliseconds(20), on: channel.eventLoop))
        let long = Wait(handler.untilWritable(limit: .hours(1), on: channel.eventLoop))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(19))
        #expect(!short.isFulfilled)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(short.isFulfilled)
        #expect(!long.isFulfilled, "another wait goes on")
        #expect(handler.writableWaiters.count == 1)
        channel.embeddedEventLoop.advanceTime(by: .hours(1))
        #expect(long.isFulfilled)
        _ = try channel.finish()
    }

    @Test func theWaitEndsWhenTheChannelCloses() throws {
        let (channel, handler) = try Self.channel(writable: false)
        let wait = Wait(handler.untilWritable(limit: .hours(1), on: channel.eventLoop))
        #expect(!wait.isFulfilled)
        try channel.close().wait()
        #expect(wait.isFulfilled)
        // Closed: a later wait does not wait.
        #expect(Wait(handler.untilWritable(limit: .hours(1), on: channel.eventLoop)).isFulfilled)
    }
}
