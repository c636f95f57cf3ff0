import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
@_spi(WSInternal) import WSCore

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
