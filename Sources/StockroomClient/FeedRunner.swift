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
            await buffer.send([.snapshot(snapshot)], bytes: 0)
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
                try await follow(progress: progress)
                failure = StreamEnded()
            } catch let error as StockroomError where error.code == .resyncRequired {
                guard let snapshot = await retrying({ [options] in try await client.snapshot(filter: options.filter) }) else { return }
                await buffer.send([.resync(snapshot)], bytes: 0)
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
            // A connection that opened starts the backoff again.
            if progress.state.withLockedValue({ state in defer { state.opened = false }; return state.opened }) { attempt = 0 }
            attempt += 1
            let delay = options.backoff.delay(attempt: attempt, after: failure)
            await buffer.send([.disconnected(failure, retryIn: delay)], bytes: 0)
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    /// A change event's data: read straight from its bytes when it has the common shape
    /// (`Change(fastJSON:)`), by `decoder` otherwise. The cursor shares `epoch`'s text (the last
    /// change's) when its epoch is the same.
    static func decodeChange(_ data: UnsafeRawBufferPointer, decoder: JSONDecoder, epoch: inout String?) throws -> Change {
        let change = try Change(fastJSON: data, knownEpoch: epoch) ?? decoder.decode(Change.self, from: Data(data))
        if epoch != change.cursor.epoch { epoch = change.cursor.epoch }
        return change
    }

    /// `decodeChange` of a text (a WebSocket's message).
    static func decodeChange(_ text: String, decoder: JSONDecoder, epoch: inout String?) throws -> Change {
        var text = text
        return try text.withUTF8 { try decodeChange(UnsafeRawBufferPointer($0), decoder: decoder, epoch: &epoch) }
    }

    /// The cursor of a progress message, `{"cursor": "…"}` (SSE's `progress` event's data), or
    /// `{"progress": {"cursor": "…"}}` (a WebSocket's) with `member`.
    static func progressCursor(_ data: String, member: String? = nil) -> FeedCursor? {
        struct Progress: Decodable { let cursor: FeedCursor }
        let decoder = JSONDecoder()
        guard let member else { return try? decoder.decode(Progress.self, from: Data(data.utf8)).cursor }
        return (try? decoder.decode([String: Progress].self, from: Data(data.utf8)))?[member]?.cursor
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
                await buffer.send([.disconnected(error, retryIn: delay)], bytes: 0)
                do { try await Task.sleep(for: delay) } catch { return nil }
            }
        }
        return nil
    }

    /// One connection (a stream, a WebSocket, or a run of long-polls) from the progress's cursor,
    /// delivering its changes until it ends, fails, or falls silent.
    private func follow(progress: FeedProgress) async throws {
        switch options.transport {
        case .serverSentEvents: try await followStream(progress: progress)
        case .webSocket: try await followWebSocket(progress: progress)
        case .longPoll(let wait, let limit): try await followLongPolls(wait: wait, limit: limit, progress: progress)
        }
    }

    /// Says the connection is open: the backoff starts again, and the reader hears `.connected`
    /// with the log's `head` when the server named it.
    func opened(_ progress: FeedProgress, head: FeedCursor? = nil) async {
        progress.state.withLockedValue {
            $0.opened = true
            $0.lastActivity = .now
        }
        await buffer.send([.connected(head: head)], bytes: 0)
    }

    /// The query every transport sends: the topics, the device, the filter.
    var feedQuery: [(String, String?)] {
        [("topics", StockroomClient.topics(options.topics)), ("clientID", options.clientID?.rawValue), ("filter", options.filter?.text)]
    }
}

/// What one read of a connection brought, handed to the reader together: its changes after the
/// last one delivered (one already delivered, as a reconnection may send again, is dropped), and
/// the position after them.
struct Handover {
    private(set) var events: [FeedEvent] = []
    /// The bytes of the stream they came in (what the buffer's limit counts).
    let bytes: Int
    private var last: (cursor: FeedCursor, seq: Int)?
    private var lastSeq: Int?

    init(after progress: FeedProgress, bytes: Int) {
        self.bytes = bytes
        lastSeq = progress.state.withLockedValue { $0.lastSeq }
    }

    mutating func change(_ change: Change) {
        guard lastSeq.map({ change.seq > $0 }) ?? true else { return }
        lastSeq = change.seq
        last = (change.cursor, change.seq)
        events.append(.change(change))
    }

    /// The position moved past changes the feed does not show (its filter, topics or their owner
    /// hid them): resume from there, and tell the reader (`.progress`).
    mutating func moved(to cursor: FeedCursor) {
        guard lastSeq.map({ Int64(cursor.seq) > Int64($0) }) ?? true else { return }
        lastSeq = Int(cursor.seq)
        last = (cursor, Int(cursor.seq))
        events.append(.progress(cursor))
    }

    /// Hands the events to the reader, then moves the position to resume from past them; false
    /// when there was nothing to hand over.
    @discardableResult
    func deliver(to buffer: FeedBuffer, _ progress: FeedProgress) async -> Bool {
        guard let last else { return false }
        progress.state.withLockedValue { $0.handingOver = true }
        await buffer.send(events, bytes: bytes)
        progress.state.withLockedValue { state in
            state.cursor = last.cursor
            state.lastSeq = last.seq
            state.handingOver = false
            state.lastActivity = .now
        }
        return true
    }
}
