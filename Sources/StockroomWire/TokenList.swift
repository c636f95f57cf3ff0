/// `GET /v1/tokens`: every token, without secrets.
public struct TokenList: Hashable, Sendable, Codable {
    public var tokens: [TokenInfo]

    public init(tokens: [TokenInfo]) {
        self.tokens = tokens
    }
}
