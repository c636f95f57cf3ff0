import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// Follows the feed and feeds its buffer; one runs per iterator.
struct FeedRunner: Sendable {
    let client: StockroomClient
    let options: FeedOptions
    let buffer: FeedBuffer

    func run(from start: FeedStart) async {
        let progress: FeedProgress
        switch start {
        case .snapshot:
            guard let snapshot = await retrying({ [options] in try await client.snapshot(filter: options.filter) }) else { return }
            await buffer.send([.snapshot(snapshot)])
            progress = FeedProgress(cursor: snapshot.cursor)
        case .after(let cursor):
            progress = FeedProgress(cursor: cursor)
        case .beginning:
            progress = FeedProgress(cursor: nil)
        case .now:
            // The head as a cursor, so that a reconnection before the first change resumes from there
            // and not from "now" again (which would skip what committed in between).
            guard let head = await retrying({ try await client.changes(from: .now, limit: 1).cursor }) else { return }
            progress = FeedProgress(cursor: head)
        }
        var attempt = 0
        while !Task.isCancelled {
            let failure: any Error
            do {
                try await follow(progress: progress) { attempt = 0 }
                failure = StreamEnded()
            } catch let error as StockroomError where error.code == .resyncRequired {
                guard let snapshot = await retrying({ [options] in try await client.snapshot(filter: options.filter) }) else { return }
                await buffer.send([.resync(snapshot)])
                progress.state.withLockedValue {
                    $0.cursor = snapshot.cursor
                    $0.lastSeq = nil
                }
                attempt = 0
                continue
            } catch let error as StockroomError where error.isRefusal || error.code == .unauthorized {
                buffer.finish(throwing: error)
                return
            } catch {
                if Task.isCancelled { return }
                failure = error
            }
            attempt += 1
            let delay = options.backoff.delay(attempt: attempt, after: failure)
            await buffer.send([.disconnected(failure, retryIn: delay)])
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    /// A change event's data: read straight from its bytes when it has the common shape
    /// (`Change(fastJSON:)`), by `decoder` otherwise.
    static func decodeChange(_ data: String, decoder: JSONDecoder) throws -> Change {
        var data = data
        if let change = data.withUTF8({ Change(fastJSON: UnsafeRawBufferPointer($0)) }) { return change }
        return try decoder.decode(Change.self, from: Data(data.utf8))
    }

    /// The cursor of a `progress` event's data, `{"cursor": "…"}`.
    static func progressCursor(_ data: String) -> FeedCursor? {
        struct Progress: Decodable { let cursor: FeedCursor }
        return try? JSONDecoder().decode(Progress.self, from: Data(data.utf8)).cursor
    }

    /// Runs `operation` until it succeeds, with backoff, saying `.disconnected` after each failure.
    /// Nil when the feed ends instead (cancelled, or an error no retry can fix, which fails the feed).
    private func retrying<Value: Sendable>(_ operation: @Sendable () async throws -> Value) async -> Value? {
        var attempt = 0
        while !Task.isCancelled {
            do {
                let value = try await operation()
                return Task.isCancelled ? nil : value
            } catch let error as StockroomError where error.isRefusal || error.code == .unauthorized {
                buffer.finish(throwing: error)
                return nil
            } catch {
                if Task.isCancelled { return nil }
                attempt += 1
                let delay = options.backoff.delay(attempt: attempt, after: error)
                await buffer.send([.disconnected(error, retryIn: delay)])
                do { try await Task.sleep(for: delay) } catch { return nil }
            }
        }
        return nil
    }

    /// One connection: opens the stream from the progress's cursor and delivers its changes until
    /// it ends, fails, or falls silent.
    private func follow(progress: FeedProgress, onOpen: () -> Void) async throws {
        let cursor = progress.state.withLockedValue { $0.cursor }
        var query = [("topics", StockroomClient.topics(options.topics))]
        if let device = options.clientID { query.append(("clientID", device.rawValue)) }
        if let filter = options.filter { query.append(("filter", filter.text)) }
        let response = try await client.open(
            .GET, "/v1/changes/stream", query: query, headers: cursor.map { [("Last-Event-ID", $0.encoded)] } ?? [],
            accept: "text/event-stream")
        guard response.status == .ok else {
            let body = try? await response.body.collect(upTo: 1 << 20)
            throw StockroomError(
                status: Int(response.status.code), body: body.map { Data(buffer: $0) } ?? Data(),
                retryAfter: StockroomClient.retryAfter(response.headers))
        }
        onOpen()
        progress.state.withLockedValue { $0.lastActivity = .now }
        await buffer.send([.connected])
        let buffer = self.buffer
        let timeout = options.heartbeatTimeout
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var parser = SSEParser()
                let decoder = JSONCoding.decoder()
                for try await chunk in response.body {
                    progress.state.withLockedValue { $0.lastActivity = .now }
                    // What the chunk completes goes to the reader in one hand-over.
                    var batch: [FeedEvent] = []
                    var last: (cursor: FeedCursor, seq: Int)?
                    var lastSeq = progress.state.withLockedValue { $0.lastSeq }
                    var failure: (any Error)?
                    events: for output in parser.feed(chunk.readableBytesView) {
                        guard case .event(_, let name, let data) = output else { continue }
                        switch name {
                        case "change":
                            let change: Change
                            do {
                                change = try Self.decodeChange(data, decoder: decoder)
                            } catch {
                                failure = TransportError("a change does not decode", underlying: error)
                                break events
                            }
                            guard lastSeq.map({ change.seq > $0 }) ?? true else { continue }
                            lastSeq = change.seq
                            last = (change.cursor, change.seq)
                            batch.append(.change(change))
                        case "progress":
                            // The position moved past changes the filter hides: resume from there.
                            guard let cursor = Self.progressCursor(data), lastSeq.map({ Int64(cursor.seq) > Int64($0) }) ?? true else { continue }
                            lastSeq = Int(cursor.seq)
                            last = (cursor, Int(cursor.seq))
                            batch.append(.progress(cursor))
                        case "error":
                            failure = StockroomError(status: 0, body: Data(data.utf8), retryAfter: nil).withStatusFromCode()
                            break events
                        default:
                            continue
                        }
                    }
                    if let last {
                        progress.state.withLockedValue { $0.handingOver = true }
                        await buffer.send(batch)
                        progress.state.withLockedValue { state in
                            state.cursor = last.cursor
                            state.lastSeq = last.seq
                            state.handingOver = false
                            state.lastActivity = .now
                        }
                    }
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
