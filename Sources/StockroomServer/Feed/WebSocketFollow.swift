import Foundation
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import StockroomCore
import StockroomStorage
import StockroomWire

extension FeedController {
    /// Why a WebSocket's feed ended.
    enum WebSocketEnd: Sendable {
        case followEnded, clientClosed, shutdown
        /// The client's messages broke a rule of the protocol (a message over 16 KiB, even in
        /// fragments; text that is not UTF-8): rethrown, so that the close carries its code.
        case clientBrokeProtocol(any Error)
    }

    /// Applies one client message; the error to answer when it is not a valid `setFilter`.
    static func handle(_ message: WebSocketMessage, control: FilterControl) -> APIError? {
        let shape = #"a message must be {"setFilter": {"filter": "…"}}"#
        guard case .text(let text) = message else { return APIError.invalidJSON(shape) }
        let parsed: FeedSocketMessage
        do {
            parsed = try JSONCoding.decoder().decode(FeedSocketMessage.self, from: Data(text.utf8))
        } catch let unknown as UnknownKey {
            return APIError.invalidJSON("\(shape); \(unknown) is not one of its keys")
        } catch {
            return APIError.invalidJSON(shape)
        }
        if let repeated = JSONDuplicateKey.find(in: text.utf8) {
            return APIError.invalidJSON("\(shape); '\(repeated.field)' is given twice", field: repeated.field)
        }
        guard let raw = parsed.setFilter.filter else {
            control.request(nil)
            return nil
        }
        do throws(ItemFilterError) {
            control.request(try ItemFilter(parsing: raw))
            return nil
        } catch {
            return refusal(error, name: "filter")
        }
    }

    static func webSocket(
        database: any Storage, streams: FeedStreams, settings: FeedSettings, start: Subscription, tokenID: TokenID,
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, session: WebSocketSessionContext
    ) async throws {
        let logger = session.logger
        let control = FilterControl()
        let end = await withTaskGroup(of: WebSocketEnd.self) { group in
            group.addTask {
                do {
                    try await follow(
                        database: database, streams: streams, start: start, tokenID: tokenID, settings: settings, transport: .webSocket,
                        channel: session.channel, control: control
                    ) { event in
                        switch event {
                        case .changes(let entries):
                            for entry in entries { try await outbound.write(.text(entry.json)) }
                        case .heartbeat:
                            try await outbound.write(.custom(.init(fin: true, opcode: .ping, data: ByteBuffer())))
                        case .refilter(let delta):
                            var json = JSONWriter(capacity: 256 + delta.items.count * 200)
                            json.raw(#"{"refilter":"#)
                            Self.write(delta, to: &json)
                            json.raw("}")
                            try await outbound.write(.text(String(decoding: json.bytes, as: UTF8.self)))
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
                } catch let error as StoreError {
                    // The database failed under the stream (PostgreSQL out of reach, a read past its
                    // bound): closed with the error a request would get (4503), and the client
                    // resumes from its last change's cursor.
                    logger.warning("WebSocket stream ended: the database failed", metadata: ["reason": "\(error)"])
                    try? await WebSocketUpgrade.close(outbound, with: APIError(store: error))
                } catch {
                    logger.debug("WebSocket subscriber ended", metadata: ["reason": "\(error)"])
                }
                return .followEnded
            }
            group.addTask {
                await session.shutdown.wait()
                return .shutdown
            }
            // The client's messages: `setFilter` changes the stream's item filter; a message that is
            // not one is answered with an error message, and the stream goes on as it was. Its close
            // (or a dropped connection) ends the inbound stream: stop following at once.
            group.addTask {
                var messages = inbound.messages(maxSize: 16 * 1024).makeAsyncIterator()
                while true {
                    let message: WebSocketMessage?
                    do {
                        message = try await messages.next()
                    } catch {
                        return .clientBrokeProtocol(error)
                    }
                    guard let message else { break }
                    if let error = Self.handle(message, control: control) {
                        do {
                            // The contract's error body itself: `{"error": {"code", "message", "field"}}`.
                            try await outbound.write(.text(error.json()))
                        } catch {
                            logger.debug("WebSocket inbound ended", metadata: ["reason": "\(error)"])
                            break
                        }
                    }
                }
                return .clientClosed
            }
            let first = await group.next() ?? .followEnded
            group.cancelAll()
            return first
        }
        if case .clientBrokeProtocol(let error) = end {
            // The WebSocket handler closes with the code the error names (1009, 1007, 1002).
            throw error
        }
        // The server is stopping: its shutdown ended the feed, or the feed ended as it began to.
        let stopping = if case .shutdown = end { true } else { session.shutdown.isFired }
        if stopping { try? await outbound.close(.goingAway, reason: nil) }
    }
}
