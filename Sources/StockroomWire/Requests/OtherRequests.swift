import StockroomCore

/// `PUT /v1/clients/{clientID}/navigation`'s body: a whole navigation state, as a navigation read
/// answers it (`clientID`, `url`, `version` and `updatedAt` may come along and are ignored, but a
/// `clientID` must be well formed); absent `checkpoints` read as none.
public struct NavigationReplacementBody: Hashable, Sendable, Decodable {
    public let clientID: ClientID?
    public let state: NavigationState

    private enum CodingKeys: String, CodingKey { case clientID }

    public init(from decoder: any Decoder) throws {
        clientID = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(ClientID.self, forKey: .clientID)
        state = try NavigationState(from: decoder)
    }
}

/// `POST /v1/clients/{clientID}/commands`'s body: `{"command": {"<name>": {…}}}`; the commands of an
/// edit are read without `JSONDecoder` (`Command(fastRequestJSON:)`).
public struct CommandRequestBody: FastJSONDecodable, Encodable, Hashable, Sendable {
    public let command: Command

    public init(command: Command) {
        self.command = command
    }

    public init?(fastJSON bytes: UnsafeRawBufferPointer) {
        guard let command = Command(fastRequestJSON: bytes) else { return nil }
        self.command = command
    }
}

/// `POST /v1/tokens`'s body: `{"user", "role"}`, whom the new token acts for (the user is checked
/// by the server: `UserID(validating:)`).
public struct TokenRequestBody: Hashable, Sendable, Codable {
    public let user: String
    public let role: Role

    public init(user: String, role: Role) {
        self.user = user
        self.role = role
    }
}

/// `/health`'s and `/ready`'s body: `{"status": "ok"}`.
public struct StatusBody: Hashable, Sendable, Codable {
    public let status: String

    public init(status: String) {
        self.status = status
    }

    /// `{"status": "ok"}`.
    public static let ok = StatusBody(status: "ok")
}

extension StatusBody: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"status":"#)
        json.string(status)
        json.raw("}")
    }
}

/// A message a client sends on the feed's WebSocket: `{"setFilter": {"filter": "…"}}` changes the
/// stream's item filter in place (`filter` null or absent: every item). Any other key, at either
/// level, is refused, so that a misspelled `filter` is an error rather than a stream of every item.
/// Encoded with `filter` always written (`null` for every item).
public struct FeedSocketMessage: Hashable, Sendable, Codable {
    public struct SetFilter: Hashable, Sendable, Codable {
        /// The new filter's text, in the grammar of `filter=`; nil for every item.
        public let filter: String?

        public init(filter: String?) {
            self.filter = filter
        }

        private enum CodingKeys: String, CodingKey { case filter }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseKeys(other: ["filter"])
            filter = try decoder.container(keyedBy: CodingKeys.self).decodeNullable(String.self, forKey: .filter)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeNullable(filter, forKey: .filter)
        }
    }

    public let setFilter: SetFilter

    public init(setFilter: SetFilter) {
        self.setFilter = setFilter
    }

    private enum CodingKeys: String, CodingKey { case setFilter }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseKeys(other: ["setFilter"])
        setFilter = try decoder.container(keyedBy: CodingKeys.self).decode(SetFilter.self, forKey: .setFilter)
    }
}

/// A key that a message which refuses other keys does not have (`FeedSocketMessage`); thrown
/// from its decoding as it is, so that the answer can name the key.
public struct UnknownKey: Error, Hashable, Sendable, CustomStringConvertible {
    /// The key as the client sent it, cut to 64 characters.
    public let name: String
    public var description: String { "unknown key \"\(name)\"" }
}

/// Any key of a JSON object, to see the keys a `CodingKeys` enum would pass over.
private struct NamedKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// Throws `UnknownKey` naming the first key of this object that is not one of `known`.
    fileprivate func refuseKeys(other known: Set<String>) throws {
        let container = try container(keyedBy: NamedKey.self)
        if let unknown = container.allKeys.first(where: { !known.contains($0.stringValue) }) {
            let name = unknown.stringValue.count > 64 ? unknown.stringValue.prefix(64) + "..." : unknown.stringValue
            throw UnknownKey(name: String(name))
        }
    }
}
