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
        await opened(progress)
        let buffer = self.buffer
        let timeout = options.heartbeatTimeout
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var parser = SSEParser()
                let decoder = JSONCoding.decoder()
                for try await chunk in response.body {
                    progress.state.withLockedValue { $0.lastActivity = .now }
                    // What the chunk completes goes to the reader in one hand-over.
                    var handover = Handover(after: progress)
                    var failure: (any Error)?
                    events: for output in parser.feed(chunk.readableBytesView) {
                        guard case .event(_, let name, let data) = output else { continue }
                        switch name {
                        case "change":
                            do {
                                handover.change(try Self.decodeChange(data, decoder: decoder))
                            } catch {
                                failure = TransportError("a change does not decode", underlying: error)
                                break events
                            }
                        case "progress":
                            if let cursor = Self.progressCursor(data) { handover.moved(to: cursor) }
                        case "error":
                            failure = StockroomError(status: 0, body: Data(data.utf8), retryAfter: nil).withStatusFromCode()
                            break events
                        default:
                            continue
                        }
                    }
                    await handover.deliver(to: buffer, progress)
                    if let failure { throw failure }
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
