import NIOCore
import NIOHTTP1
import NIOWebSocket
import HummingbirdCore

/// Sits right after the HTTP decoder and encoder. While the connection speaks HTTP it passes
/// everything on; once switched, it hands inbound WebSocket frames straight to the tail, past the
/// HTTP handlers (whose request stream would take nothing else), and sends on what the tail writes.
final class ProtocolSwitchHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias OutboundIn = Any

    let encoder: HTTPResponseEncoder
    private let decoder: ByteToMessageHandler<HTTPRequestDecoder>
    private let tail: WebSocketTailHandler
    var context: ChannelHandlerContext?
    private(set) var switched = false
    /// The HTTP encoder's place, where a parked response's framed chunks go out (see `writeParkedChunks`);
    /// set once a streamed response goes on from here with no task behind it (see `park(channel:)`).
    var encoderContext: ChannelHandlerContext?
    /// The parked response is HTTP/1.0's: its chunks go out as their bodies (see `writeParkedChunks`).
    var parkedUnframed = false
    /// Streams waiting for the channel to take writes again (`untilWritable`).
    var writableWaiters: [EventLoopPromise<Void>] = []
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
        releaseWritableWaiters()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { releaseWritableWaiters() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        releaseWritableWaiters()
        context.fireChannelInactive()
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
            // Keep reading, so that the client's close is seen at once: once parked, nothing above asks for reads.
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

    /// Writes what the tail writes once switched, from this point of the pipeline.
    func write(_ data: NIOAny, promise: EventLoopPromise<Void>?) { context?.write(data, promise: promise) }
    func flush() { context?.flush() }
    func read() { context?.read() }
    func close(mode: CloseMode, promise: EventLoopPromise<Void>?) {
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
            [
                LingeringClose(), WebSocketFrameEncoder(), ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)),
                WebSocketProtocolErrorHandler(),
                ClientFrameRules(),
            ],
            position: .before(self))
        switched = true
        sync.removeHandler(decoder, promise: nil)
        sync.removeHandler(encoder, promise: nil)
        // Its idle timer is for HTTP; a WebSocket has its own pings.
        if let state = try? sync.handler(type: HTTPConnectionStateHandler.self) {
            sync.removeHandler(state, promise: nil)
        }
        tail.switched(to: self)
        let webSocket = try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        // Bytes that came in the same read as the upgrade request (a client's first frames) reach
        // the frame stream as the HTTP decoder leaves, in a task it queued on the loop above. The
        // stream hands on what it has read when a read completes: one completes after them here,
        // or they would wait for the client's next bytes.
        let tail = self.tail
        context.eventLoop.assumeIsolated().execute { tail.deliverReadComplete() }
        return webSocket
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
