import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
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
        // The upgrade in a function of its own: this closure's async frame, which every request of
        // a connection allocates in the connection's task, then holds none of the upgrade's values.
        self.responder = { request, writer, channel in
            guard WebSocketUpgrade.isRequested(request.head) else {
                return try await responder(request, writer, channel)
            }
            try await Self.upgrade(
                request, writer: writer, channel: channel, webSocketResponder: webSocketResponder, webSocketPaths: webSocketPaths,
                maxFrameSize: maxFrameSize, sessionConfiguration: sessionConfiguration, logger: logger)
        }
    }

    /// Answers a request that asks to upgrade: a WebSocket session on the connection when its route
    /// accepts it, else the refusal (a close frame on a WebSocket path, plain HTTP elsewhere). Always
    /// throws at the end, which ends Hummingbird's HTTP loop for this connection.
    private static func upgrade(
        _ request: Request, writer: consuming ResponseWriter, channel: any Channel, webSocketResponder: some HTTPResponder<AppRequestContext>,
        webSocketPaths: Set<String>, maxFrameSize: Int, sessionConfiguration: WebSocketHandler.Configuration, logger: Logger
    ) async throws {
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
