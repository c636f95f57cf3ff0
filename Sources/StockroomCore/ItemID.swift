import Foundation

/// The identifier of an item: a UUID written in lowercase, accepted in any case.
public struct ItemID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The underlying UUID.
    public let uuid: UUID

    /// Wraps a UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses a UUID string in any case; nil when it is not a UUID.
    public init?(_ string: String) {
        guard let uuid = UUID(uuidString: string) else { return nil }
        self.uuid = uuid
    }

    /// A new random identifier.
    public static func random() -> ItemID { ItemID(UUID()) }

    /// The canonical lowercase form.
    public var description: String { uuid.uuidString.lowercased() }

    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.description < rhs.description }
}

extension ItemID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = ItemID(string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(string)' is not a UUID")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
