import Foundation

/// One committed change, as the feed delivers it.
public struct Change: Hashable, Sendable {
    /// What kind of entity changed.
    public typealias Entity = ChangeEntity

    /// What happened to it.
    public typealias Operation = ChangeOp

    /// The entity's value after the change (nil for a delete).
    public enum Value: Hashable, Sendable {
        case item(Item)
        case navigation(Navigation)
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
    /// The entity's identifier: an item id or a client id.
    public var id: String
    /// The value after the change; nil for a delete.
    public var value: Value?
    /// Who caused it.
    public var origin: Origin
    /// When it was committed.
    public var at: Date

    /// Creates a change.
    public init(seq: Int, cursor: FeedCursor, entity: Entity, operation: Operation, id: String, value: Value?, origin: Origin, at: Date) {
        self.seq = seq
        self.cursor = cursor
        self.entity = entity
        self.operation = operation
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

    /// The navigation after a navigation change.
    public var navigation: Navigation? {
        if case .navigation(let navigation) = value { return navigation }
        return nil
    }
}

extension Change: Codable {
    private enum CodingKeys: String, CodingKey { case seq, cursor, entity, op, id, value, origin, at }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let entity = try c.decode(Entity.self, forKey: .entity)
        let value: Value? =
            switch entity {
            case .item: try c.decodeIfPresent(Item.self, forKey: .value).map(Value.item)
            case .navigation: try c.decodeIfPresent(Navigation.self, forKey: .value).map(Value.navigation)
            }
        self.init(
            seq: try c.decode(Int.self, forKey: .seq),
            cursor: try c.decode(FeedCursor.self, forKey: .cursor),
            entity: entity,
            operation: try c.decode(Operation.self, forKey: .op),
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
        try c.encode(id, forKey: .id)
        switch value {
        case .item(let item): try c.encode(item, forKey: .value)
        case .navigation(let navigation): try c.encode(navigation, forKey: .value)
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

/// What `GET /v1/snapshot` returns: every live item and the user's devices, read in one
/// transaction, and the cursor to follow the feed from so that nothing is missed or repeated.
public struct Snapshot: Hashable, Sendable, Codable {
    /// Every live item, in creation order.
    public var items: [Item]
    /// The navigation of every device of the token's user, most recently changed first.
    public var navigation: [Navigation]
    /// Where the feed continues.
    public var cursor: FeedCursor

    /// Creates a snapshot.
    public init(items: [Item], navigation: [Navigation], cursor: FeedCursor) {
        self.items = items
        self.navigation = navigation
        self.cursor = cursor
    }
}

/// One batch of `GET /v1/changes`.
public struct ChangeBatch: Hashable, Sendable, Codable {
    /// The changes, in commit order.
    public var changes: [Change]
    /// Where the next batch starts (past entries this token does not see, too).
    public var cursor: FeedCursor
    /// Whether more changes are waiting right now.
    public var hasMore: Bool
}

/// What a command did: the device's navigation after it, the item it wrote, and the feed position.
public struct CommandResult: Hashable, Sendable {
    /// The navigation after the command.
    public var navigation: Navigation
    /// The item the command wrote (`save`), if any.
    public var item: Item?
    /// The feed cursor after the command's commit.
    public var cursor: FeedCursor
    /// Whether the server replayed the stored answer of an earlier attempt with the same
    /// idempotency key (`Idempotency-Replayed: true`) instead of applying the command again.
    public var replayed: Bool

    /// Creates a command result.
    public init(navigation: Navigation, item: Item?, cursor: FeedCursor, replayed: Bool) {
        self.navigation = navigation
        self.item = item
        self.cursor = cursor
        self.replayed = replayed
    }
}

/// Who a token acts for (`GET /v1/users/me`).
public struct Identity: Hashable, Sendable, Codable {
    /// The user.
    public var user: UserID
    /// The token's role.
    public var role: Role
    /// The token's public identifier.
    public var tokenID: TokenID
}

/// A bearer token as an admin lists it (no secret).
public struct TokenInfo: Hashable, Sendable, Codable {
    /// The token's public identifier.
    public var id: TokenID
    /// The user it acts for.
    public var user: UserID
    /// What it may do.
    public var role: Role
    /// When it was created.
    public var createdAt: Date
    /// When it was revoked, if it was.
    public var revokedAt: Date?
}

/// A token just created: its secret is shown this once.
public struct NewToken: Hashable, Sendable, Codable {
    /// The token's public identifier.
    public var id: TokenID
    /// The user it acts for.
    public var user: UserID
    /// What it may do.
    public var role: Role
    /// The bearer secret.
    public var token: String
    /// When it was created.
    public var createdAt: Date
}
