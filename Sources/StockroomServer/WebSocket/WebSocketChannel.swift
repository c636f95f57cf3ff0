import Crypto
import StockroomCore
import StockroomWire
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import ServiceLifecycle
import Synchronization
@_spi(WSInternal) import WSCore

/// HTTP/1.1 where any request of a connection, the first or a later one on a kept-alive
/// connection, can switch the connection to WebSocket.
///
/// hummingbird-websocket upgrades only a connection's first request (NIO's upgrade handler goes
/// once it has seen one) and answers a later one with a `307` to the same URL and a closed
/// connection; and a route that refuses an upgrade becomes a bare `400`, which a browser only sees as
/// close code 1006. Here an upgrade request to a WebSocket path always gets its `101`: the route's
/// refusal becomes a close frame (`4000 + status`, `WebSocketUpgrade.closeCode`), and Hummingbird's
/// own HTTP loop, responder and WSCore's WebSocket handler are used as they are. The switch works
/// inside the pipeline: `ProtocolSwitchHandler`, right after the HTTP codec, and
/// `WebSocketTailHandler`, after the HTTP request stream, carry the WebSocket frames past the
/// HTTP handlers between them once the `101` is written.
struct WebSocketUpgradingHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let configuration: HTTP1WebSocketUpgradeChannel.Configuration

    /// - Parameters:
    ///   - responder: the application's responder, for every request that does not ask to upgrade.
    ///   - webSocketResponder: the router, for requests that ask to upgrade: it is asked with a
    ///     `WebSocketUpgrade` in the context, which a WebSocket route accepts or `ErrorMiddleware` refuses.
    ///   - webSocketPaths: the paths whose refusals are close frames; elsewhere a refusal is plain HTTP.
    init(
        responder: @escaping HTTPChannelHandler.Responder,
        webSocketResponder: some HTTPResponder<AppRequestContext>,
        webSocketPaths: Set<String>,
        configuration: HTTP1WebSocketUpgradeChannel.Configuration,
        logger: Logger
    ) {
        self.configuration = configuration
        let sessionConfiguration = WebSocketHandler.Configuration(
            extensions: [], autoPing: configuration.ws.autoPing, closeTimeout: configuration.ws.closeTimeout,
            validateUTF8: configuration.ws.validateUTF8, maxFrameSize: configuration.ws.maxFrameSize)
        let maxFrameSize = configuration.ws.maxFrameSize
        self.responder = { request, writer, channel in
            guard WebSocketUpgrade.isRequested(request.head) else {
                return try await responder(request, writer, channel)
            }
            let upgrade = WebSocketUpgrade()
            var context = AppRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
            context.webSocketUpgrade = upgrade
            var response = try await webSocketResponder.respond(to: request, context: context)
            let accept = WebSocketUpgrade.acceptValue(request.head)
            let handler: WebSocketUpgrade.Handler
            switch (upgrade.decision, accept) {
            case (.accept(let accepted), .some):
                handler = accepted
            case (.refuse(let error), .some) where webSocketPaths.contains(request.uri.path):
                handler = { _, outbound, _ in try await WebSocketUpgrade.close(outbound, with: error) }
            case (.accept, nil):
                response = WebSocketUpgrade.handshakeError(request.head).reply.response
                fallthrough
            default:
                // Not upgraded: the plain answer, and the connection closes, since NIO's HTTP decoder
                // parses nothing after a request that asked to upgrade.
                response.headers[.connection] = "close"
                try await writer.write(response: response.head, body: response.body)
                throw WebSocketUpgrade.ConnectionSwitched()
            }
            let webSocket = try await ProtocolSwitchHandler.switchToWebSocket(channel: channel, accept: accept ?? "", maxFrameSize: maxFrameSize)
            await WebSocketSession.run(webSocket, configuration: sessionConfiguration, logger: context.logger, handler: handler)
            // Ends Hummingbird's HTTP loop for this connection, which closes it.
            throw WebSocketUpgrade.ConnectionSwitched()
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let http1 = configuration.http1
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            limits.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            limits.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            // What Hummingbird's HTTP1Channel sets up, with two differences: the decoder hands on the bytes that
            // follow an upgrade request, and the two switch handlers frame the HTTP part of the pipeline.
            let encoder = HTTPResponseEncoder(configuration: .init())
            let decoder = ByteToMessageHandler(
                HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .drop, limitConfiguration: limits))
            let tail = WebSocketTailHandler()
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(encoder)
            try sync.addHandler(decoder)
            try sync.addHandler(ProtocolSwitchHandler(encoder: encoder, decoder: decoder, tail: tail))
            try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try sync.addHandlers(http1.additionalChannelHandlers())
            try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
            let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            try sync.addHandler(tail)
            return http
        }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

/// Sits right after the HTTP decoder and encoder. While the connection speaks HTTP it passes
/// everything on; once switched, it hands inbound WebSocket frames straight to the tail, past the
/// HTTP handlers (whose request stream would take nothing else), and sends on what the tail writes.
final class ProtocolSwitchHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias OutboundIn = Any

    private let encoder: HTTPResponseEncoder
    private let decoder: ByteToMessageHandler<HTTPRequestDecoder>
    private let tail: WebSocketTailHandler
    private var context: ChannelHandlerContext?
    private(set) var switched = false
    /// The HTTP encoder's place, where a parked response's framed chunks go out (see `writeParkedChunks`);
    /// set once a streamed response goes on from here with no task behind it (see `park(channel:)`).
    private var encoderContext: ChannelHandlerContext?
    private var parked: Bool { encoderContext != nil }

    init(encoder: HTTPResponseEncoder, decoder: ByteToMessageHandler<HTTPRequestDecoder>, tail: WebSocketTailHandler) {
        self.encoder = encoder
        self.decoder = decoder
        self.tail = tail
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        encoderContext = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if switched {
            tail.deliver(data)
        } else if !parked {
            context.fireChannelRead(data)
        }
        // Parked: whatever a client sends after its stream's request is dropped; nothing will read it.
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if switched {
            tail.deliverReadComplete()
        } else if parked {
            // Keep reading, so that the client's close is seen at once (the request stream above no longer asks).
            context.read()
        } else {
            context.fireChannelReadComplete()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !parked else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard !parked else {
            // The HTTP layers above let go of a parked connection by closing it (Hummingbird's
            // connection task as it ends): the parked stream, not they, decides when it closes.
            promise?.succeed(())
            return
        }
        context.close(mode: mode, promise: promise)
    }

    /// Takes over the response in progress, whose head has been written: from now on the HTTP
    /// layers above (Hummingbird's request loop, its connection task) neither read nor write nor
    /// close this connection, and the stream writes its body from here, on the event loop, with no
    /// task of its own. Nil where the pipeline has no such handler (the in-process test router).
    static func park(channel: any Channel) async throws -> ParkedResponse? {
        try await channel.eventLoop.submit { () -> ParkedResponse? in
            guard let handler = try? channel.pipeline.syncOperations.handler(type: ProtocolSwitchHandler.self),
                let context = handler.context, !handler.switched,
                let encoderContext = try? channel.pipeline.syncOperations.context(handler: handler.encoder)
            else { return nil }
            handler.encoderContext = encoderContext
            context.read()
            return ParkedResponse(handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), channel: channel)
        }.get()
    }

    /// Writes already framed chunks of the parked response and flushes them. They go out from the
    /// HTTP encoder's place, past it: it framed each body part as three writes through every handler
    /// between here and the socket, for every stream; a shared, framed chunk is one.
    fileprivate func writeParkedChunks(_ chunks: [ByteBuffer]) {
        guard let encoderContext else { return }
        for chunk in chunks { encoderContext.write(NIOAny(IOData.byteBuffer(chunk)), promise: nil) }
        encoderContext.flush()
    }

    /// Ends the parked response and closes the connection: the HTTP loop that would read a next request is gone.
    fileprivate func endParked() {
        guard let context else { return }
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
        context.close(mode: .all, promise: nil)
    }

    /// Closes the parked connection without ending its response (a client cut off mid-stream).
    fileprivate func closeParked() {
        context?.close(mode: .all, promise: nil)
    }

    /// Writes what the tail writes once switched, from this point of the pipeline.
    fileprivate func write(_ data: NIOAny, promise: EventLoopPromise<Void>?) { context?.write(data, promise: promise) }
    fileprivate func flush() { context?.flush() }
    fileprivate func read() { context?.read() }
    fileprivate func close(mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.close(mode: mode, promise: promise)
    }

    /// Writes the `101` through the HTTP encoder, then replaces the HTTP codec with the WebSocket
    /// one (the bytes after the request go to the new decoder) and opens the frame stream.
    private func switchToWebSocket(channel: any Channel, accept: String, maxFrameSize: Int) throws
        -> NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
    {
        guard let context else { throw ChannelError.ioOnClosedChannel }
        var headers = HTTPHeaders()
        headers.add(name: "Upgrade", value: "websocket")
        headers.add(name: "Connection", value: "Upgrade")
        headers.add(name: "Sec-WebSocket-Accept", value: accept)
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .switchingProtocols, headers: headers))), promise: nil)
        let sync = channel.pipeline.syncOperations
        try sync.addHandlers(
            [WebSocketFrameEncoder(), ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)), WebSocketProtocolErrorHandler()],
            position: .before(self))
        switched = true
        sync.removeHandler(decoder, promise: nil)
        sync.removeHandler(encoder, promise: nil)
        // Its idle timer is for HTTP; a WebSocket has its own pings.
        if let state = try? sync.handler(type: HTTPConnectionStateHandler.self) {
            sync.removeHandler(state, promise: nil)
        }
        tail.switched(to: self)
        return try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
    }

    /// Switches `channel`, which has just read an upgrade request, to WebSocket on its event loop.
    static func switchToWebSocket(channel: any Channel, accept: String, maxFrameSize: Int) async throws
        -> NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
    {
        try await channel.eventLoop.submit {
            let handler = try channel.pipeline.syncOperations.handler(type: ProtocolSwitchHandler.self)
            return try handler.switchToWebSocket(channel: channel, accept: accept, maxFrameSize: maxFrameSize)
        }.get()
    }
}

/// A response whose connection `ProtocolSwitchHandler` has taken over (see `park(channel:)`): its
/// body is written from the handler, on the channel's event loop, by whoever holds this.
struct ParkedResponse: Sendable {
    let handler: NIOLoopBound<ProtocolSwitchHandler>
    let channel: any Channel

    /// Writes and flushes HTTP/1.1 chunks (`SSEFrames.chunk(of:)`), in order with every earlier write of the response.
    func write(chunks: [ByteBuffer]) { onLoop { $0.writeParkedChunks(chunks) } }
    /// Ends the response and closes the connection.
    func end() { onLoop { $0.endParked() } }
    /// Closes the connection at once.
    func close() { onLoop { $0.closeParked() } }

    private func onLoop(_ body: @escaping (ProtocolSwitchHandler) -> Void) {
        if channel.eventLoop.inEventLoop {
            body(handler.value)
        } else {
            let handler = self.handler
            channel.eventLoop.execute { body(handler.value) }
        }
    }
}

/// Thrown by a streamed body once it has parked its response (`ProtocolSwitchHandler.park`), so
/// that Hummingbird's connection task lets go of the connection and ends; the stream goes on.
struct StreamDetached: Error {
    let channel: any Channel
}

/// The last handler before a switched connection's WebSocket frame stream: takes the frames from
/// `ProtocolSwitchHandler` and routes the stream's writes, reads and close back to it. Before the
/// switch it only drops what the HTTP request stream passes on.
final class WebSocketTailHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias OutboundIn = Any

    private var context: ChannelHandlerContext?
    private var head: ProtocolSwitchHandler?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.head = nil
    }

    fileprivate func switched(to head: ProtocolSwitchHandler) { self.head = head }
    fileprivate func deliver(_ data: NIOAny) { context?.fireChannelRead(data) }
    fileprivate func deliverReadComplete() { context?.fireChannelReadComplete() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // HTTP parts the request stream has already taken (it passes reads on): nothing after it wants them.
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let head { head.write(data, promise: promise) } else { context.write(data, promise: promise) }
    }

    func flush(context: ChannelHandlerContext) {
        if let head { head.flush() } else { context.flush() }
    }

    func read(context: ChannelHandlerContext) {
        // The HTTP request stream, paused with a part nobody will read, would hold the frames' reads back.
        if let head { head.read() } else { context.read() }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if let head { head.close(mode: mode, promise: promise) } else { context.close(mode: mode, promise: promise) }
    }
}

/// A WebSocket upgrade request being decided: the WebSocket route accepts it with a handler, or
/// `ErrorMiddleware` refuses it with the error it would have answered.
final class WebSocketUpgrade: Sendable {
    /// What runs on the upgraded connection.
    typealias Handler = @Sendable (WebSocketInboundStream, WebSocketOutboundWriter, WebSocketSessionContext) async throws -> Void

    enum Decision: Sendable {
        case accept(Handler)
        case refuse(APIError)
    }

    /// Thrown by the responder once it has taken the connection over, so that Hummingbird closes it afterwards.
    struct ConnectionSwitched: Error {}

    private let state = Mutex<Decision?>(nil)

    /// Upgrades and runs `handler`.
    func accept(_ handler: @escaping Handler) { state.withLock { $0 = .accept(handler) } }
    /// Upgrades and closes with the error's close code and body.
    func refuse(_ error: APIError) { state.withLock { $0 = .refuse(error) } }
    var decision: Decision? { state.withLock { $0 } }

    /// Whether a request asks to switch to WebSocket (`Connection: upgrade` and `Upgrade: websocket`).
    static func isRequested(_ head: HTTPRequest) -> Bool {
        func tokens(_ name: HTTPField.Name) -> [String] {
            head.headerFields[values: name].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        return head.method == .get && tokens(.connection).contains("upgrade") && tokens(.upgrade).contains("websocket")
    }

    static let keyHeader = HTTPField.Name("Sec-WebSocket-Key")!
    static let versionHeader = HTTPField.Name("Sec-WebSocket-Version")!

    /// `Sec-WebSocket-Accept` for a valid handshake (version 13, a key of 16 bytes in base64), else nil.
    static func acceptValue(_ head: HTTPRequest) -> String? {
        guard head.headerFields[versionHeader] == "13", let key = head.headerFields[keyHeader]?.trimmingCharacters(in: .whitespaces),
            Data(base64Encoded: key)?.count == 16
        else { return nil }
        let digest = Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        return Data(digest).base64EncodedString()
    }

    /// The plain HTTP error for a handshake that cannot be finished (RFC 6455 4.2.2).
    static func handshakeError(_ head: HTTPRequest) -> APIError {
        guard head.headerFields[versionHeader] == "13" else {
            var error = APIError(.upgradeRequired, "Sec-WebSocket-Version must be 13")
            error.headers[versionHeader] = "13"
            return error
        }
        return APIError.invalidParameter("Sec-WebSocket-Key", "Sec-WebSocket-Key must be 16 bytes in base64")
    }

    /// The close code for an error: `4000 + status` (4401, 4410, ...).
    static func closeCode(for error: APIError) -> WebSocketErrorCode {
        WebSocketErrorCode(codeNumber: 4000 + error.status.code)
    }

    /// The close reason for an error: its JSON body, within the 123 bytes a close frame allows.
    static func closeReason(for error: APIError) -> String { error.json(maxBytes: 123) }

    /// Closes a WebSocket with a contract error: code `4000 + status`, the error body as the reason.
    /// Every refusal and every error that ends a WebSocket goes through here.
    static func close(_ outbound: WebSocketOutboundWriter, with error: APIError) async throws {
        try await outbound.close(closeCode(for: error), reason: closeReason(for: error))
    }
}

/// What a WebSocket handler gets besides its streams.
struct WebSocketSessionContext: WebSocketContext {
    let logger: Logger
    /// The connection, to see whether it still takes writes.
    let channel: any Channel
    /// Fires when the server shuts down gracefully; the handler then closes with 1001.
    let shutdown: ShutdownSignal
}

enum WebSocketSession {
    /// Runs `handler` on a switched connection until the WebSocket closes.
    static func run(
        _ asyncChannel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, configuration: WebSocketHandler.Configuration, logger: Logger,
        handler: @escaping WebSocketUpgrade.Handler
    ) async {
        let shutdown = ShutdownSignal()
        let context = WebSocketSessionContext(logger: logger, channel: asyncChannel.channel, shutdown: shutdown)
        // Detached, so outside the server's graceful-shutdown scope: inside it WSCore closes every
        // WebSocket with 1000 on shutdown, racing the handler's 1001. The handler hears of it from `shutdown`.
        let session = Task.detached {
            _ = try await WebSocketHandler.handle(type: .server, configuration: configuration, asyncChannel: asyncChannel, context: context, handler: handler)
        }
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                do {
                    try await session.value
                } catch {
                    logger.debug("WebSocket ended", metadata: ["error": "\(error)"])
                }
            } onCancel: {
                session.cancel()
            }
        } onGracefulShutdown: {
            shutdown.fire()
        }
    }
}

/// A one-shot signal that any number of tasks can wait for.
final class ShutdownSignal: Sendable {
    private struct State {
        var fired = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    var isFired: Bool { state.withLock { $0.fired } }

    /// Returns once fired, or when the waiting task is cancelled.
    func wait() async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
