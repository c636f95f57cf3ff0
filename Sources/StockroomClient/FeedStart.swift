/// Where a feed starts.
public enum FeedStart: Hashable, Sendable {
    /// Take a snapshot first (delivered as `FeedEvent.snapshot`), then follow from its cursor.
    case snapshot
    /// After this cursor: the changes not yet seen.
    case after(FeedCursor)
    /// The beginning of the retained log.
    case beginning
    /// The head: only what commits from now on.
    case now
}
