import NIOCore

/// A response whose connection `ProtocolSwitchHandler` has taken over (see `park(channel:)`): its
/// body is written from the handler, on the channel's event loop, by whoever holds this.
struct ParkedResponse: Sendable {
    let handler: NIOLoopBound<ProtocolSwitchHandler>
    let channel: any Channel

    /// Writes and flushes HTTP/1.1 chunks (`SSEFrames.chunk(of:)`), in order with every earlier write of the response.
    func write(chunks: [ByteBuffer]) {
        // Once per delivery, mostly on the loop already: no closure to allocate then.
        if channel.eventLoop.inEventLoop {
            handler.value.writeParkedChunks(chunks)
        } else {
            onLoop { $0.writeParkedChunks(chunks) }
        }
    }
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
