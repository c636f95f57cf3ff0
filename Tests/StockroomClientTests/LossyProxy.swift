import Foundation
import NIOCore
import NIOPosix
import StockroomClient
import Synchronization
import Testing

/// A TCP proxy on loopback in front of a real server that can lose one answer: armed, it forwards
/// the next request whose first line starts with a given prefix, lets the server apply it, then
/// drops the server's answer and closes the client's connection, as a network failure after the
/// server's commit would. It can also answer requests itself with a failure (`500`, or `503` or `429`
/// with `Retry-After`), as a failing or overloaded server would.
/// Everything else passes through unchanged.
final class LossyProxy: Sendable {
    private let channel: any Channel
    private let box: ArmedPrefix

    var port: Int { channel.localAddress?.port ?? 0 }

    /// How many answers were dropped.
    var droppedAnswers: Int { box.dropped.withLock { $0 } }

    init(upstreamPort: Int) async throws {
        let box = ArmedPrefix()
        self.box = box
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                inbound.pipeline.addHandler(Frontend(upstreamPort: upstreamPort, armed: box))
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
    }

    /// Loses the answer to the next request whose request line starts with `prefix`.
    func loseNextAnswer(toRequestStartingWith prefix: String) {
        box.armed.withLock { $0 = prefix }
    }

    /// Answers every request whose request line starts with `prefix` itself, without sending it
    /// on: `500 internal` by default, or `503 unavailable` or `429 tooManyRequests`, with a
    /// `Retry-After` of `retryAfter` seconds when given; then closes that connection. Nil stops.
    func failAnswers(toRequestsStartingWith prefix: String?, status: Int = 500, retryAfter: Int? = nil) {
        box.failing.withLock { $0 = prefix.map { Failing(prefix: $0, status: status, retryAfter: retryAfter) } }
    }

    /// How many requests were answered with a failure.
    var failedAnswers: Int { box.failed.withLock { $0 } }

    func close() async {
        try? await channel.close()
    }
}

/// Which requests the proxy answers itself, and how.
struct Failing: Sendable {
    let prefix: String
    let status: Int
    let retryAfter: Int?

    /// The whole answer, closing the connection.
    var answer: String {
        let (reason, code) =
            switch status {
            case 503: ("Service Unavailable", "unavailable")
            case 429: ("Too Many Requests", "tooManyRequests")
            default: ("Internal Server Error", "internal")
            }
        let body = #"{"error":{"code":"\#(code)","message":"the proxy fails this request","field":null}}"#
        return "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + (retryAfter.map { "Retry-After: \($0)\r\n" } ?? "") + "Connection: close\r\n\r\n" + body
    }
}

/// The armed prefix and the count of dropped answers, shared by every connection.
final class ArmedPrefix: Sendable {
    let armed = Mutex<String?>(nil)
    let dropped = Mutex(0)
    let failing = Mutex<Failing?>(nil)
    let failed = Mutex(0)

    /// The proxy's own answer when `bytes` open a request it fails (counted); nil otherwise.
    func failure(_ bytes: ByteBuffer) -> String? {
        failing.withLock { failing in
            guard let failing,
                bytes.getString(at: bytes.readerIndex, length: min(bytes.readableBytes, failing.prefix.utf8.count)) == failing.prefix
            else { return nil }
            failed.withLock { $0 += 1 }
            return failing.answer
        }
    }

    /// True (and disarmed) when `bytes` open the request armed for.
    func take(_ bytes: ByteBuffer) -> Bool {
        armed.withLock { prefix in
            guard let armedPrefix = prefix, bytes.getString(at: bytes.readerIndex, length: min(bytes.readableBytes, armedPrefix.utf8.count)) == armedPrefix
            else { return false }
            prefix = nil
            return true
        }
    }
}

/// The client's side of one proxied connection.
final class Frontend: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: every member is only touched on the inbound channel's event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let upstreamPort: Int
    let armed: ArmedPrefix
    private var upstream: (any Channel)?
    private var buffered: [ByteBuffer] = []
    private var loseAnswer = false
    private var answeredItself = false

    init(upstreamPort: Int, armed: ArmedPrefix) {
        self.upstreamPort = upstreamPort
        self.armed = armed
    }

    func channelActive(context: ChannelHandlerContext) {
        let inbound = context.channel
        let loop = context.eventLoop
        ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.pipeline.addHandler(Backend(frontend: self, inbound: inbound))
            }
            .connect(host: "127.0.0.1", port: upstreamPort)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.upstream = channel
                    for buffer in self.buffered { channel.writeAndFlush(buffer, promise: nil) }
                    self.buffered = []
                case .failure:
                    inbound.close(promise: nil)
                }
            }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        // The rest of a request the proxy answered itself (its body, read later) goes nowhere: sent
        // on, the server's answer to those bytes would reach the client as a second answer.
        guard !answeredItself else { return }
        if let answer = armed.failure(buffer) {
            answeredItself = true
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
                self.upstream?.close(promise: nil)
            }
            return
        }
        if armed.take(buffer) { loseAnswer = true }
        if let upstream {
            upstream.writeAndFlush(buffer, promise: nil)
        } else {
            buffered.append(buffer)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        upstream?.close(promise: nil)
    }

    /// The server answered: passed on, or lost.
    func answer(_ buffer: ByteBuffer, inbound: any Channel) {
        inbound.eventLoop.execute {
            if self.loseAnswer {
                self.armed.dropped.withLock { $0 += 1 }
                inbound.close(promise: nil)
                self.upstream?.close(promise: nil)
                return
            }
            inbound.writeAndFlush(buffer, promise: nil)
        }
    }
}

/// The server's side of one proxied connection.
final class Backend: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    let frontend: Frontend
    let inbound: any Channel

    init(frontend: Frontend, inbound: any Channel) {
        self.frontend = frontend
        self.inbound = inbound
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        frontend.answer(unwrapInboundIn(data), inbound: inbound)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbound.close(promise: nil)
    }
}

/// Runs `body` with a store of device "phone" whose client talks to `server` through a
/// `LossyProxy`: started, once it has its snapshot and is online (or, with `started: false`, not
/// started, for a test that drives delivery itself); then stops the store and closes the proxy.
@MainActor
func withStoreBehindProxy(
    _ server: TestServer, options: SyncedStore.Options = testStoreOptions, started: Bool = true,
    _ body: (LossyProxy, SyncedStore) async throws -> Void
) async throws {
    let proxy = try await LossyProxy(upstreamPort: try server.port)
    let client = StockroomClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!, token: server.editor)
    let store = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: options)
    // The store stops and the proxy is closed before the server: a proxy still connecting upstream
    // while the server shuts down is a race of the test's own making.
    do {
        if started {
            store.start()
            try await waitUntil(store, "online") { $0.isLoaded && $0.connection == .online }
        }
        try await body(proxy, store)
    } catch {
        store.stop()
        await proxy.close()
        throw error
    }
    store.stop()
    await proxy.close()
}
