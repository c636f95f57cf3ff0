import NIOConcurrencyHelpers

/// The events a feed's connection has read and its reader has not taken yet: the runner adds what
/// each read brings, and the reader takes all of them at once, so that a catch-up of many changes
/// costs a hand-over per read of the reader, not per change. Each read's events stay the array
/// they came in (a run): a hand-over is the runs in order, never copied into one array, whose
/// growth would copy every event (a retain and a release of each of its references) and take fresh
/// memory each time. The runner waits while the events waiting came in `limit` bytes of the stream
/// or more: the connection reads no further ahead of its reader than that.
final class FeedBuffer: Sendable {
    private struct State {
        /// Each send's events, in order; none is empty.
        var runs: [[FeedEvent]] = []
        /// The bytes of the stream `runs` came in.
        var bytes = 0
        /// The feed ended: nil, or the error the reader gets once its events are taken.
        var end: (any Error)??
        var reader: CheckedContinuation<[[FeedEvent]]?, any Error>?
        var writer: CheckedContinuation<Void, Never>?
    }

    /// How many bytes of the stream may wait, as events, before `send` waits.
    let limit: Int
    /// A feed's: 32 MiB, about 70,000 item changes. A reader that stops for a while (a main actor
    /// busy for 150 ms growing a million items' dictionary, about 16 MiB of a catch-up's stream)
    /// finds what came meanwhile decoded, and the server went on sending, instead of waiting on a
    /// full socket. The buffer fills only while its reader stops: a reader that keeps up holds
    /// one read's worth.
    static let defaultLimit = 32 << 20
    private let state = NIOLockedValueBox(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Adds `events`, which came in `bytes` bytes of the stream (0: none, as `.connected` or a
    /// snapshot read apart), for the reader; returns once fewer than `limit` bytes are waiting (or
    /// the feed ended, or the task is cancelled).
    func send(_ events: [FeedEvent], bytes: Int) async {
        guard !events.isEmpty else { return }
        let (reader, taken, mustWait): (CheckedContinuation<[[FeedEvent]]?, any Error>?, [[FeedEvent]], Bool) = state.withLockedValue { state in
            guard state.end == nil else { return (nil, [], false) }
            state.runs.append(events)
            state.bytes += bytes
            guard let reader = state.reader else { return (nil, [], state.bytes >= limit) }
            state.reader = nil
            defer {
                state.runs = []
                state.bytes = 0
            }
            return (reader, state.runs, false)
        }
        reader?.resume(returning: taken)
        guard mustWait else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (writer: CheckedContinuation<Void, Never>) in
                let waits = state.withLockedValue { state in
                    guard state.bytes >= limit, state.end == nil, !Task.isCancelled else { return false }
                    state.writer = writer
                    return true
                }
                if !waits { writer.resume() }
            }
        } onCancel: {
            state.withLockedValue { state in
                defer { state.writer = nil }
                return state.writer
            }?.resume()
        }
    }

    /// What waits for the reader: its events, the bytes they came in, and whether the runner waits
    /// for the reader to take them.
    var waiting: (events: Int, bytes: Int, runnerWaits: Bool) {
        state.withLockedValue { state in (state.runs.reduce(0) { $0 + $1.count }, state.bytes, state.writer != nil) }
    }

    /// Ends the feed: the reader takes what is waiting, then gets `error` (nil: the end).
    func finish(throwing error: (any Error)? = nil) {
        let (reader, writer): (CheckedContinuation<[[FeedEvent]]?, any Error>?, CheckedContinuation<Void, Never>?) = state.withLockedValue { state in
            guard state.end == nil else { return (nil, nil) }
            // A reader waits only when no event does: it gets the end now, and the end stays.
            let reader = state.reader
            state.end = reader == nil ? .some(error) : .some(nil)
            state.reader = nil
            defer { state.writer = nil }
            return (reader, state.writer)
        }
        writer?.resume()
        guard let reader else { return }
        if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
    }

    /// Takes every event waiting, in the runs they were sent in (none empty), waiting for one when
    /// none is; nil once the feed ended (after throwing its error, if it had one) or the task is cancelled.
    func next() async throws -> [[FeedEvent]]? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: CheckedContinuation<[[FeedEvent]]?, any Error>) in
                enum Answer {
                    case events([[FeedEvent]], writer: CheckedContinuation<Void, Never>?)
                    case end((any Error)?)
                    case wait
                }
                let answer: Answer = state.withLockedValue { state in
                    if !state.runs.isEmpty {
                        defer {
                            state.runs = []
                            state.bytes = 0
                            state.writer = nil
                        }
                        return .events(state.runs, writer: state.writer)
                    }
                    if let end = state.end {
                        // The error is thrown once; after it, the end.
                        state.end = .some(nil)
                        return .end(end)
                    }
                    if Task.isCancelled { return .end(nil) }
                    state.reader = reader
                    return .wait
                }
                switch answer {
                case .events(let events, let writer):
                    writer?.resume()
                    reader.resume(returning: events)
                case .end(let error?):
                    reader.resume(throwing: error)
                case .end(nil):
                    reader.resume(returning: nil)
                case .wait:
                    break
                }
            }
        } onCancel: {
            state.withLockedValue { state in
                defer { state.reader = nil }
                return state.reader
            }?.resume(returning: nil)
        }
    }
}
