import NIOCore
import NIOHTTP1

extension ProtocolSwitchHandler {
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
            // An HTTP/1.0 answer has no chunks: its body is the frames themselves (see `MalformedRequestGuard`).
            handler.parkedUnframed = (try? channel.pipeline.syncOperations.handler(type: MalformedRequestGuard.self))?.answeringHTTP10 ?? false
            context.read()
            return ParkedResponse(handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), channel: channel)
        }.get()
    }

    /// Writes already framed chunks of the parked response and flushes them. They go out from the
    /// HTTP encoder's place, past it: it framed each body part as three writes through every handler
    /// between here and the socket, for every stream; a shared, framed chunk is one. An HTTP/1.0
    /// answer gets each chunk's body, unframed.
    func writeParkedChunks(_ chunks: [ByteBuffer]) {
        guard let encoderContext else { return }
        for chunk in chunks {
            encoderContext.write(NIOAny(IOData.byteBuffer(parkedUnframed ? SSEFrames.frame(ofChunk: chunk) : chunk)), promise: nil)
        }
        encoderContext.flush()
    }

    /// Ends the parked response and closes the connection: the HTTP loop that would read a next request is gone.
    func endParked() {
        guard let context else { return }
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
        context.close(mode: .all, promise: nil)
    }

    /// Closes the parked connection without ending its response (a client cut off mid-stream).
    func closeParked() {
        context?.close(mode: .all, promise: nil)
    }
}
