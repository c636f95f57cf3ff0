import Foundation
import StockroomCore

/// `{"item": {"id": "…"}}`.
extension Route: Codable {
    private enum Kind: String, CodingKey, CaseIterable { case item }
    private enum Fields: String, CodingKey { case id }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Kind.self)
        let fields = try container.nestedContainer(keyedBy: Fields.self, forKey: try container.onlyKey())
        self = .item(id: try fields.decode(ItemID.self, forKey: .id))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Kind.self)
        switch self {
        case .item(let id):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .item)
            try fields.encode(id, forKey: .id)
        }
    }
}

extension Checkpoint: Codable {
    private enum CodingKeys: String, CodingKey { case depth, value }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(depth: try c.decode(Int.self, forKey: .depth), value: try c.decodeNullable(JSONValue.self, forKey: .value))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(depth, forKey: .depth)
        try c.encodeNullable(value, forKey: .value)
    }
}

extension NavigationState: Codable {
    private enum CodingKeys: String, CodingKey { case tab, path, destination, checkpoints }

    /// Absent `checkpoints` (a client's `PUT` without them, or a state stored before them) read as none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            tab: try c.decode(Tab.self, forKey: .tab),
            path: try c.decode([Route].self, forKey: .path),
            destination: try c.decodeIfPresent(Destination.self, forKey: .destination),
            checkpoints: try c.decodeIfPresent([String: Checkpoint].self, forKey: .checkpoints) ?? [:]
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(tab, forKey: .tab)
        try c.encode(path, forKey: .path)
        try c.encodeNullable(destination, forKey: .destination)
        try c.encode(checkpoints, forKey: .checkpoints)
    }
}

/// A device's navigation: its state's fields at the top level, with the state's URL, the version
/// and the time of the last change.
extension Navigation: Codable {
    private enum CodingKeys: String, CodingKey { case clientID, tab, path, destination, checkpoints, url, version, updatedAt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            clientID: try c.decode(ClientID.self, forKey: .clientID),
            state: NavigationState(
                tab: try c.decode(Tab.self, forKey: .tab),
                path: try c.decode([Route].self, forKey: .path),
                destination: try c.decodeIfPresent(Destination.self, forKey: .destination),
                checkpoints: try c.decodeIfPresent([String: Checkpoint].self, forKey: .checkpoints) ?? [:]
            ),
            version: try c.decode(Int.self, forKey: .version),
            updatedAt: try c.decodeIfPresent(Date.self, forKey: .updatedAt)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(clientID, forKey: .clientID)
        try c.encode(state.tab, forKey: .tab)
        try c.encode(state.path, forKey: .path)
        try c.encode(state.destination, forKey: .destination)
        try c.encode(state.checkpoints, forKey: .checkpoints)
        try c.encode(state.url, forKey: .url)
        try c.encode(version, forKey: .version)
        try c.encode(updatedAt, forKey: .updatedAt)
    }
}

extension Presence: Codable {
    private enum CodingKeys: String, CodingKey { case clientID, online, lastSeenAt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            clientID: try c.decode(ClientID.self, forKey: .clientID), online: try c.decode(Bool.self, forKey: .online),
            lastSeenAt: try c.decodeIfPresent(Date.self, forKey: .lastSeenAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(clientID, forKey: .clientID)
        try c.encode(online, forKey: .online)
        try c.encodeNullable(lastSeenAt, forKey: .lastSeenAt)
    }
}

/// Any JSON value, as sent.
extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
