import Foundation
import StockroomCore

/// One committed change, as the feed delivers it.
public struct Change: Hashable, Sendable {
    /// What kind of entity changed.
    public typealias Entity = ChangeEntity

    /// What happened to it.
    public typealias Operation = ChangeOp

    /// The entity's value after the change (nil for a delete). Boxed (`indirect`): a change is
    /// copied several times between the feed's connection and a store, and a navigation held
    /// inline would make every change, item changes too, as large as a navigation.
    public indirect enum Value: Hashable, Sendable {
        case item(Item)
        case navigation(Navigation)
        case presence(Presence)
    }

    /// Who caused a change: the device and the idempotency key of the request, when it had them.
    public struct Origin: Hashable, Sendable, Codable {
        /// The device whose command caused the change; nil for a plain item write.
        public var clientID: ClientID?
        /// The request's `Idempotency-Key`, if it had one.
        public var idempotencyKey: String?

        /// Creates an origin.
        public init(clientID: ClientID?, idempotencyKey: String?) {
            self.clientID = clientID
            self.idempotencyKey = idempotencyKey
        }
    }

    /// The change's position in commit order; no gaps in the log.
    public var seq: Int
    /// Where a feed resumes to see what comes after this change.
    public var cursor: FeedCursor
    /// The kind of entity.
    public var entity: Entity
    /// Upsert or delete.
    public var operation: Operation
    /// On a filtered feed, how an item change crossed the filter; nil otherwise.
    public var move: ChangeMove?
    /// The entity's identifier: an item id or a client id.
    public var id: String
    /// The value after the change; nil for a delete.
    public var value: Value?
    /// Who caused it.
    public var origin: Origin
    /// When it was committed.
    public var at: Date

    /// Creates a change.
    public init(
        seq: Int, cursor: FeedCursor, entity: Entity, operation: Operation, move: ChangeMove? = nil, id: String, value: Value?, origin: Origin,
        at: Date
    ) {
        self.seq = seq
        self.cursor = cursor
        self.entity = entity
        self.operation = operation
        self.move = move
        self.id = id
        self.value = value
        self.origin = origin
        self.at = at
    }

    /// The item after an item upsert.
    public var item: Item? {
        if case .item(let item) = value { return item }
        return nil
    }

    /// The presence after a presence change.
    public var presence: Presence? {
        if case .presence(let presence) = value { return presence }
        return nil
    }

    /// The navigation after a navigation change.
    public var navigation: Navigation? {
        if case .navigation(let navigation) = value { return navigation }
        return nil
    }
}

extension Change: Codable {
    private enum CodingKeys: String, CodingKey { case seq, cursor, entity, op, move, id, value, origin, at }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let entity = try c.decode(Entity.self, forKey: .entity)
        let value: Value? =
            switch entity {
            case .item: try c.decodeIfPresent(Item.self, forKey: .value).map(Value.item)
            case .navigation: try c.decodeIfPresent(Navigation.self, forKey: .value).map(Value.navigation)
            case .presence: try c.decodeIfPresent(Presence.self, forKey: .value).map(Value.presence)
            }
        self.init(
            seq: try c.decode(Int.self, forKey: .seq),
            cursor: try c.decode(FeedCursor.self, forKey: .cursor),
            entity: entity,
            operation: try c.decode(Operation.self, forKey: .op),
            move: try c.decodeIfPresent(ChangeMove.self, forKey: .move),
            id: try c.decode(String.self, forKey: .id),
            value: value,
            origin: try c.decode(Origin.self, forKey: .origin),
            at: try c.decode(Date.self, forKey: .at)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(seq, forKey: .seq)
        try c.encode(cursor, forKey: .cursor)
        try c.encode(entity, forKey: .entity)
        try c.encode(operation, forKey: .op)
        try c.encodeIfPresent(move, forKey: .move)
        try c.encode(id, forKey: .id)
        switch value {
        case .item(let item): try c.encode(item, forKey: .value)
        case .navigation(let navigation): try c.encode(navigation, forKey: .value)
        case .presence(let presence): try c.encode(presence, forKey: .value)
        case nil: try c.encodeNil(forKey: .value)
        }
        try c.encode(origin, forKey: .origin)
        try c.encode(at, forKey: .at)
    }
}

extension Change.Origin {
    private enum CodingKeys: String, CodingKey { case clientID, idempotencyKey }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            clientID: try c.decodeIfPresent(ClientID.self, forKey: .clientID),
            idempotencyKey: try c.decodeIfPresent(String.self, forKey: .idempotencyKey))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(clientID, forKey: .clientID)
        try c.encode(idempotencyKey, forKey: .idempotencyKey)
    }
}
