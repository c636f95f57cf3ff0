import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import StockroomCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit, raised to its hard limit at startup: every connection is a file
/// descriptor, and at the soft default of 1,024 a few idle clients leave the server deaf.
enum FileDescriptorLimit {
    /// File descriptors kept for SQLite, logs and the listener beyond the connection cap.
    static let reserve = 128
    /// Below the limit by this much the server stops accepting (SQLite's files stay openable).
    static let ceilingReserve = 32

    /// Raises the soft limit to the hard one (logging both) and returns the limit now in force.
    @discardableResult
    static func raise(logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let soft = limit.rlim_cur
        var target = limit.rlim_max
        if target == rlim_t.max { target = 1 << 20 }  // RLIM_INFINITY
        if target > soft {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 { target = soft }
        }
        logger.info("open-file limit", metadata: ["soft": "\(soft)", "hard": "\(limit.rlim_max)", "now": "\(target)"])
        return Int(min(target, rlim_t(Int32.max)))
    }
}

/// Counts the open connections; past the cap a new one is answered `503` with `Retry-After` and closed.
final class ConnectionCounter: Sendable {
    let maximum: Int
    private let open = Atomic<Int>(0)
    private let gauge = Gauge(label: "stockroom_connections_open")
    private let refusals = Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "connections")])

    init(maximum: Int) { self.maximum = maximum }

    /// Counts a new connection until it closes; false when it is over the cap.
    func admit(_ channel: any Channel) -> Bool {
        let count = open.wrappingAdd(1, ordering: .relaxed).newValue
        gauge.record(count)
        channel.closeFuture.whenComplete { [self] _ in
            gauge.record(open.wrappingSubtract(1, ordering: .relaxed).newValue)
        }
        guard count <= maximum else {
            refusals.increment()
            return false
        }
        return true
    }
}

/// Placed first in the pipeline of a connection over the cap: answers its first bytes with the
/// contract's `503 unavailable` and `Retry-After`, then closes; nothing reaches the application.
final class OverCapacityResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let response: String = {
        let body = APIError(.unavailable, "too many connections; retry later").json()
        return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body
    }()

    private var answered = false
    private var timer: Scheduled<Void>?

    func handlerAdded(context: ChannelHandlerContext) {
        // A client that sends nothing is not waited for.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .seconds(2)) { loopBound.value.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        answered = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: Self.response))).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
    }
}

/// Counts feed subscribers in total and per token; past a cap a new one is refused with `503`.
final class SubscriberLimits: Sendable {
    private let maxTotal: Int
    private let maxPerToken: Int
    private let counts = Mutex<(total: Int, perToken: [TokenID: Int])>((0, [:]))

    init(maxTotal: Int, maxPerToken: Int) {
        self.maxTotal = maxTotal
        self.maxPerToken = maxPerToken
    }

    /// A place for one subscriber of `token`, held until the lease is released or dropped.
    func acquire(token: TokenID) throws -> Lease {
        let refusal: (limit: String, message: String)? = counts.withLock { counts in
            if counts.total >= maxTotal { return ("subscribers", "too many feed subscribers (\(maxTotal)); retry later") }
            if counts.perToken[token, default: 0] >= maxPerToken {
                return ("subscribersPerToken", "too many feed subscribers for this token (\(maxPerToken)); retry later")
            }
            counts.total += 1
            counts.perToken[token, default: 0] += 1
            return nil
        }
        if let refusal {
            Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", refusal.limit)]).increment()
            var error = APIError(.unavailable, refusal.message)
            error.headers[.retryAfter] = "5"
            throw error
        }
        return Lease { [self] in
            counts.withLock { counts in
                counts.total -= 1
                counts.perToken[token, default: 1] -= 1
                if counts.perToken[token] == 0 { counts.perToken[token] = nil }
            }
        }
    }

    /// One subscriber's place; released once, at the latest when dropped.
    final class Lease: Sendable {
        private let onRelease: Mutex<(@Sendable () -> Void)?>

        init(_ onRelease: @escaping @Sendable () -> Void) { self.onRelease = Mutex(onRelease) }

        func release() {
            onRelease.withLock { action in
                let release = action
                action = nil
                return release
            }?()
        }

        deinit { release() }
    }
}
