import StockroomCore

/// The contract's error body as a client reads it, `{"error":{"code","message","field","current"?}}`
/// (`ErrorJSON` writes it).
public struct ErrorBody: Hashable, Sendable, Decodable {
    /// The object under `error`.
    public struct Object: Hashable, Sendable, Decodable {
        public let code: ErrorCode
        public let message: String
        public let field: String?
        public let current: Item?

        private enum CodingKeys: String, CodingKey { case code, message, field, current }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            code = ErrorCode(rawValue: try container.decode(String.self, forKey: .code))
            message = try container.decode(String.self, forKey: .message)
            field = try container.decodeIfPresent(String.self, forKey: .field)
            current = try container.decodeIfPresent(Item.self, forKey: .current)
        }
    }

    public let error: Object
}
