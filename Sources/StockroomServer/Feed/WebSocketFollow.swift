import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import StockroomCore
import StockroomStorage

extension FeedController {
    /// Why a WebSocket's feed ended.
    enum WebSocketEnd: Sendable {
        case followEnded, clientClosed, shutdown
    }

    static func webSocket(
        database: any Storage, streams: FeedStreams, settings: FeedSettings, start: Subscription, tokenID: TokenID,
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, session: WebSocketSessionContext
    ) async throws {
        let logger = session.logger
        let end = await withTaskGroup(of: WebSocketEnd.self) { group in
            group.addTask {
                do {
                    try await follow(
                        database: database, streams: streams, start: start, tokenID: tokenID, settings: settings, transport: .webSocket,
                        channel: session.channel
                    ) { event in
                        switch event {
                        case .changes(let entries):
                            for entry in entries { try await outbound.write(.text(entry.json)) }
                        case .heartbeat:
                            try await outbound.write(.custom(.init(fin: true, opcode: .ping, data: ByteBuffer())))
                        case .progress(let cursor):
                            try await outbound.write(.text(#"{"progress":{"cursor":""# + cursor.encoded + #""}}"#))
                        case .open:
                            break
                        case .resync(let message):
                            try await WebSocketUpgrade.close(outbound, with: APIError(.resyncRequired, message))
                        case .revoked:
                            try await WebSocketUpgrade.close(outbound, with: Self.revoked)
                        }
                    }
                } catch {
                    logger.debug("WebSocket subscriber ended", metadata: ["reason": "\(error)"])
                }
                return .followEnded
            }
            group.addTask {
                await session.shutdown.wait()
                return .shutdown
            }
            // The client sends nothing we need, but its close (or a dropped connection) ends the inbound
            // stream: stop following at once instead of at the next heartbeat.
            group.addTask {
                do {
                    for try await _ in inbound {}
                } catch {
                    logger.debug("WebSocket inbound ended", metadata: ["reason": "\(error)"])
                }
                return .clientClosed
            }
            let first = await group.next() ?? .followEnded
            group.cancelAll()
            return first
        }
        if end == .shutdown || session.shutdown.isFired {
            try? await outbound.close(.goingAway, reason: nil)
        }
    }
}
