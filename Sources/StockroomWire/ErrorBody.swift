import StockroomCore

/// The contract's error body as a client reads it, `{"error":{"code","message","field","current"?}}`
/// (`ErrorJSON` writes it).
public struct ErrorBody: Hashable, Sendable, Decodable {
    /// The object under `error`.
    public struct Object: Hashable, Sendable, Codable {
        public let code: ErrorCode
        public let message: String
        public let field: String?
        public let current: Item?

        public init(code: ErrorCode, message: String, field: String?, current: Item? = nil) {
            self.code = code
            self.message = message
            self.field = field
            self.current = current
        }

        private enum CodingKeys: String, CodingKey { case code, message, field, current }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            code = ErrorCode(rawValue: try container.decode(String.self, forKey: .code))
            message = try container.decode(String.self, forKey: .message)
            field = try container.decodeIfPresent(String.self, forKey: .field)
            current = try container.decodeIfPresent(Item.self, forKey: .current)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(code.rawValue, forKey: .code)
            try container.encode(message, forKey: .message)
            try container.encodeNullable(field, forKey: .field)
            try container.encodeIfPresent(current, forKey: .current)
        }
    }

    public let error: Object
}
