import Foundation

/// One batch of `GET /v1/changes`.
public struct ChangeBatch: Hashable, Sendable, Codable {
    /// The changes, in commit order.
    public var changes: [Change]
    /// Where the next batch starts (past entries this token does not see, too).
    public var cursor: FeedCursor
    /// Whether more changes are waiting right now.
    public var hasMore: Bool
}
