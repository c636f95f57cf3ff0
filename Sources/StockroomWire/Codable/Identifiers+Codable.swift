import StockroomCore

// Identifiers are JSON strings; one that does not parse is a decoding error naming the rule.

extension SingleValueDecodingContainer {
    /// The string here as `parse` reads it; a data-corrupted error saying `rule` when it does not.
    func decodeParsed<Value>(_ parse: (String) -> Value?, rule: (String) -> String) throws -> Value {
        let string = try decode(String.self)
        guard let value = parse(string) else { throw DecodingError.dataCorruptedError(in: self, debugDescription: rule(string)) }
        return value
    }
}

extension ItemID: Codable {
    public init(from decoder: any Decoder) throws {
        self = try decoder.singleValueContainer().decodeParsed({ ItemID($0) }) { "'\($0)' is not a UUID" }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension ClientID: Codable {
    public init(from decoder: any Decoder) throws {
        self = try decoder.singleValueContainer().decodeParsed({ ClientID($0) }) { _ in Self.rule }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension UserID: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(stored: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension TokenID: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// An enum of names, each case its raw value on the wire. A name that is none of them is a decoding
/// error that lists them: the standard library's coding says "Cannot initialize Tab from invalid
/// String value x", which names a Swift type and none of the names a client may send.
public protocol WireNames: RawRepresentable<String>, CaseIterable, Codable {}

extension WireNames {
    public init(from decoder: any Decoder) throws {
        self = try decoder.singleValueContainer().decodeParsed({ Self(rawValue: $0) }) {
            "'\($0)' is not one of \(Self.allCases.map(\.rawValue).joined(separator: ", "))"
        }
    }
}

extension Tab: WireNames {}
extension Role: WireNames {}
extension ChangeEntity: WireNames {}
extension ChangeOp: WireNames {}
extension ChangeMove: WireNames {}
extension ButtonState.Role: WireNames {}
extension Command.OnConflict: WireNames {}
extension Command.ConflictChoice: WireNames {}
