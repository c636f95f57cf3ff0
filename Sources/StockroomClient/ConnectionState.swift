import Foundation

/// How a ``SyncedStore`` is connected to its server.
public enum ConnectionState: Hashable, Sendable, CustomStringConvertible {
    /// Not started, or stopped.
    case idle
    /// Reading the first snapshot or opening the feed.
    case connecting
    /// Following the feed live; commands are delivered as they are sent.
    case online
    /// The server cannot be reached; commands wait in the queue and the feed retries.
    case offline(reason: String)
    /// The server refused the token (`401`) or the feed for good; nothing more is tried.
    case failed(StockroomError)

    /// Whether the feed is live.
    public var isOnline: Bool { self == .online }

    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .online: "online"
        case .offline(let reason): "offline (\(reason))"
        case .failed(let error): "failed (\(error))"
        }
    }
}

/// A write the server refused, or gave up on after its attempts: it left the queue, its
/// optimistic effect was rolled back, and the error says why (`409 conflict` and `412
/// preconditionFailed` carry the server's current item). The write keeps what it would have
/// written (an item write's `draft`), for the app to show and to offer again.
public struct WriteFailure: Hashable, Sendable, Identifiable {
    /// The write's queue id.
    public var id: QueuedWrite.ID
    /// The write.
    public var write: Write
    /// The server's answer.
    public var error: StockroomError
    /// When the answer came.
    public var at: Date

    /// The command, when the write was one.
    public var command: Command? { write.command }
}
