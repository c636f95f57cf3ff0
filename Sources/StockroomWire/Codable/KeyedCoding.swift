/// The coding rules the contract's bodies share: an optional the contract always writes (as
/// `null` when nil), and an enum written as an object with exactly one key, as Swift's synthesized
/// `Codable` writes enums with associated values.
extension KeyedEncodingContainer {
    /// Writes `value`, or `null` when it is nil: the contract's shapes always carry their keys.
    mutating func encodeNullable<Value: Encodable>(_ value: Value?, forKey key: Key) throws {
        if let value {
            try encode(value, forKey: key)
        } else {
            try encodeNil(forKey: key)
        }
    }
}

extension KeyedDecodingContainer {
    /// Reads an optional the contract writes as `null` when nil; an absent key reads as nil too.
    func decodeNullable<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value? {
        try decodeIfPresent(type, forKey: key)
    }

    /// The one key of an enum's object form, as synthesized `Codable` reads it: keys it does not
    /// know are ignored, and none or several of those it knows is an error at the enum that lists
    /// the keys it takes.
    func onlyKey() throws -> Key where Key: CaseIterable {
        guard allKeys.count == 1, let key = allKeys.first else {
            let names = Key.allCases.map(\.stringValue).joined(separator: ", ")
            // In the order of the list (a decoder's keys come in no set order).
            let present = Key.allCases.filter { key in allKeys.contains { $0.stringValue == key.stringValue } }.map(\.stringValue)
            let found = present.isEmpty ? "none of them" : "\(present.count) of them (\(present.joined(separator: ", ")))"
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: codingPath, debugDescription: "an object with one key, one of \(names), is expected; it has \(found)"))
        }
        return key
    }
}
