/// A cursor the wire carries as one opaque string (`FeedCursor`, `PageCursor`): it is written
/// `encoded`, read back with `init?(encoded:)`, and as JSON it is that string.
public protocol WireCursor: Codable, CustomStringConvertible {
    /// The cursor as written on the wire.
    var encoded: String { get }
    /// Parses an encoded cursor; nil when malformed.
    init?(encoded: String)
}

extension WireCursor {
    public var description: String { encoded }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let cursor = Self(encoded: try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a \(Self.self)")
        }
        self = cursor
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(encoded)
    }
}
