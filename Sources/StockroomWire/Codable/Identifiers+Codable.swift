import StockroomCore

// Identifiers are JSON strings; one that does not parse is a decoding error naming the rule.

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

extension ClientID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = ClientID(string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: Self.rule)
        }
        self = id
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

// Enums of names are their raw values on the wire (the standard library's `RawRepresentable` coding).
extension Tab: Codable {}
extension Role: Codable {}
extension ChangeEntity: Codable {}
extension ChangeOp: Codable {}
extension ButtonState.Role: Codable {}
extension Command.OnConflict: Codable {}
extension Command.ConflictChoice: Codable {}
