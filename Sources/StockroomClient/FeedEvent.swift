import Foundation

/// What a ``ChangeFeed`` tells its reader.
public enum FeedEvent: Sendable {
    /// The snapshot the feed started from (with `FeedStart.snapshot`); changes follow from its cursor.
    case snapshot(Snapshot)
    /// The next change, in commit order; each is delivered once.
    case change(Change)
    /// The server could not continue from the feed's cursor (`410 resyncRequired`: the log was
    /// trimmed past it, or the database was restored or replaced), so the feed took this new
    /// snapshot and continues from its cursor. Replace local state with it.
    case resync(Snapshot)
    /// The feed's position moved past changes it does not show (its filter, its topics or their
    /// owner hid them; the server's `progress` event): a reader that keeps its cursor keeps this one.
    case progress(FeedCursor)
    /// The stream is open. `head` is the log's head as the server had it when the stream opened
    /// (its `Stockroom-Head`; nil when the transport does not say): the changes up to it are the
    /// stream's catch-up, what comes after them is live. A reader may show how far a catch-up has
    /// to go, as the store uses it to make room for the items it brings.
    case connected(head: FeedCursor?)
    /// The stream dropped (or could not open); the feed tries again after `retryIn`.
    case disconnected(any Error, retryIn: Duration)
}
