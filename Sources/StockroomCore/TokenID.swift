/// A bearer token's public identifier (`tok_` and 12 URL-safe characters for tokens the server
/// creates): what lists show and revocation names; never the secret.
///
/// Any text is a token identifier to look up (a path segment that names no token is a `404`, not a
/// malformed request), so this wraps a string without checks.
public struct TokenID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The identifier as written.
    public let rawValue: String

    /// Wraps an identifier.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (lhs: TokenID, rhs: TokenID) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension TokenID: ExpressibleByStringLiteral {
    /// A literal identifier, as tests write one.
    public init(stringLiteral value: String) {
        self.init(value)
    }
}
