import Foundation

/// What a command did: the device's navigation after it, the item it wrote, and the feed position.
public struct CommandResult: Hashable, Sendable {
    /// The navigation after the command.
    public var navigation: Navigation
    /// The item the command wrote (`save`), if any.
    public var item: Item?
    /// The feed cursor after the command's commit.
    public var cursor: FeedCursor
    /// Whether the server replayed the stored answer of an earlier attempt with the same
    /// idempotency key (`Idempotency-Replayed: true`) instead of applying the command again.
    public var replayed: Bool

    /// Creates a command result.
    public init(navigation: Navigation, item: Item?, cursor: FeedCursor, replayed: Bool) {
        self.navigation = navigation
        self.item = item
        self.cursor = cursor
        self.replayed = replayed
    }
}
