/// An optional property that synthesized `Codable` writes as an explicit `null` when nil (the
/// contract's shapes always carry their keys), and reads as nil when null or absent.
///
/// Swift's synthesized encoding leaves nil optionals out (`encodeIfPresent`); this wrapper is the
/// one place that says otherwise, so models keep synthesized conformances:
/// `@ExplicitNull public var color: Color?`.
@propertyWrapper
public struct ExplicitNull<Wrapped> {
    public var wrappedValue: Wrapped?

    public init(wrappedValue: Wrapped?) {
        self.wrappedValue = wrappedValue
    }
}

extension ExplicitNull: Equatable where Wrapped: Equatable {}
extension ExplicitNull: Hashable where Wrapped: Hashable {}
extension ExplicitNull: Sendable where Wrapped: Sendable {}

extension ExplicitNull: Encodable where Wrapped: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue {
            try container.encode(wrappedValue)
        } else {
            try container.encodeNil()
        }
    }
}

extension ExplicitNull: Decodable where Wrapped: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Wrapped.self)
    }
}

extension KeyedDecodingContainer {
    /// An absent key reads as nil, as it would for a plain optional.
    public func decode<Wrapped: Decodable>(_ type: ExplicitNull<Wrapped>.Type, forKey key: Key) throws -> ExplicitNull<Wrapped> {
        try decodeIfPresent(type, forKey: key) ?? ExplicitNull(wrappedValue: nil)
    }
}
