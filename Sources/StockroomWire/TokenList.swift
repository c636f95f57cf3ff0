/// `GET /v1/tokens`: every token, without secrets.
public struct TokenList: Hashable, Sendable, Codable {
    public var tokens: [TokenInfo]

    public init(tokens: [TokenInfo]) {
        self.tokens = tokens
    }
}

extension TokenList: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"tokens":"#)
        json.array(tokens)
        json.raw("}")
    }
}
