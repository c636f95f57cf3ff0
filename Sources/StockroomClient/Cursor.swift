/// A position in the change feed, as the server wrote it; opaque (it names a database epoch and a seq).
public struct Cursor: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The cursor as written on the wire.
    public let rawValue: String

    /// Wraps a cursor the server wrote.
    public init(rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// Where a feed starts.
public enum FeedStart: Hashable, Sendable {
    /// Take a snapshot first (delivered as `FeedEvent.snapshot`), then follow from its cursor.
    case snapshot
    /// After this cursor: the changes not yet seen.
    case after(Cursor)
    /// The beginning of the retained log.
    case beginning
    /// The head: only what commits from now on.
    case now
}

/// Which entities a feed carries.
public enum Topic: String, Hashable, Sendable, CaseIterable {
    /// Item upserts and deletes (every token sees them).
    case items
    /// Navigation changes of the token's own user.
    case navigation
}
