import Foundation
import HTTPTypes
import Logging
import WSClient

// The feed over a WebSocket (`GET /v1/changes/ws`): one change per text message.

extension FeedRunner {
    /// One WebSocket from the progress's cursor, its changes delivered until it closes. A close
    /// code of `4000 + status` is the contract's error of that status, with the error body as its
    /// reason; any other close (`1001`: the server is shutting down) or a connection that drops
    /// is a drop.
    func followWebSocket(progress: FeedProgress) async throws {
        let cursor = progress.state.withLockedValue { $0.cursor }
        var url = client.url("/v1/changes/ws", query: feedQuery + [("since", cursor?.encoded)])
        if url.hasPrefix("http") { url = "ws" + url.dropFirst(4) }
        var configuration = WebSocketClientConfiguration(
            maxFrameSize: Self.largestMessage, autoPing: .enabled(timePeriod: options.heartbeatTimeout / 2), validateUTF8: true)
        configuration.additionalHeaders[.authorization] = "Bearer \(client.token)"
        let runner = self
        let close = try await WebSocketClient.connect(url: url, configuration: configuration, logger: Self.logger) { inbound, _, _ in
            await runner.opened(progress)
            let decoder = JSONCoding.decoder()
            var epoch: String?
            for try await message in inbound.messages(maxSize: Self.largestMessage) {
                guard case .text(let text) = message else { continue }
                var handover = Handover(after: progress, bytes: text.utf8.count)
                if text.hasPrefix(#"{"progress""#) {
                    guard let cursor = Self.progressCursor(text, member: "progress") else { continue }
                    handover.moved(to: cursor)
                } else {
                    do {
                        handover.change(try Self.decodeChange(text, decoder: decoder, epoch: &epoch))
                    } catch {
                        throw TransportError("a change does not decode", underlying: error)
                    }
                }
                await handover.deliver(to: runner.buffer, progress)
            }
        }
        if let close, case .unknown(let code) = close.closeCode, (4000..<5000).contains(code) {
            throw StockroomError(status: Int(code) - 4000, body: Data((close.reason ?? "").utf8), retryAfter: nil)
        }
        throw StreamEnded()
    }

    /// The largest message the feed takes (a navigation with its draft and alert is the largest change).
    static let largestMessage = 8 << 20

    static let logger = Logger(label: "StockroomClient.feed")
}
