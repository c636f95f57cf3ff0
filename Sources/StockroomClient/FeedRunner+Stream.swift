import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

// The feed over Server-Sent Events (`GET /v1/changes/stream`), the default transport.

extension FeedRunner {
    /// One connection: opens the stream from the progress's cursor and delivers its changes until
    /// it ends, fails, or falls silent.
    func followStream(progress: FeedProgress) async throws {
        let cursor = progress.state.withLockedValue { $0.cursor }
        let response = try await client.open(
            .GET, "/v1/changes/stream", query: feedQuery, headers: cursor.map { [("Last-Event-ID", $0.encoded)] } ?? [],
            accept: "text/event-stream")
        guard response.status == .ok else {
            let body = try? await response.body.collect(upTo: 1 << 20)
            throw StockroomError(
                status: Int(response.status.code), body: body.map { Data(buffer: $0) } ?? Data(),
                retryAfter: StockroomClient.retryAfter(response.headers))
        }
        await opened(progress, head: response.headers.first(name: "Stockroom-Head").flatMap(FeedCursor.init(encoded:)))
        let buffer = self.buffer
        let timeout = options.heartbeatTimeout
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var parser = SSEParser()
                let decoder = JSONCoding.decoder()
                var epoch: String?
                // Read since the last hand-over: a chunk that completes no event counts with the next.
                var bytesRead = 0
                for try await chunk in response.body {
                    progress.state.withLockedValue { $0.lastActivity = .now }
                    bytesRead += chunk.readableBytes
                    // What the chunk completes goes to the reader in one hand-over.
                    var handover = Handover(after: progress, bytes: bytesRead)
                    do {
                        try parser.feed(chunk.readableBytesView) { event in
                            switch event.name {
                            case "change":
                                do {
                                    handover.change(try Self.decodeChange(event.data, decoder: decoder, epoch: &epoch))
                                } catch {
                                    throw TransportError("a change does not decode", underlying: error)
                                }
                            case "progress":
                                if let cursor = Self.progressCursor(String(decoding: event.data, as: UTF8.self)) { handover.moved(to: cursor) }
                            case "error":
                                throw StockroomError(status: 0, body: Data(event.data), retryAfter: nil).withStatusFromCode()
                            default:
                                break
                            }
                        }
                    } catch {
                        // What came before the failure is delivered first.
                        await handover.deliver(to: buffer, progress)
                        throw error
                    }
                    if await handover.deliver(to: buffer, progress) { bytesRead = 0 }
                }
            }
            group.addTask {
                // The watchdog: a stream that falls silent is dropped (cancelling the read closes it).
                let tick = min(timeout / 4, .seconds(1))
                while true {
                    try await Task.sleep(for: tick)
                    let silent = progress.state.withLockedValue { !$0.handingOver && ContinuousClock.now - $0.lastActivity > timeout }
                    if silent { throw HeartbeatMissed(timeout: timeout) }
                }
            }
            // The reader ends (the stream ended or failed) or the watchdog fires: either way the other stops.
            try await group.next()
            group.cancelAll()
        }
    }
}
