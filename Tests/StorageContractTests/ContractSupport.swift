import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import Testing

// What the contract tests moved from StockroomStoreTests share: their fixtures, the protocol's
// writes without an idempotency key, and the store's state and log read back through the protocol
// alone (the feed, the lists), where the SQLite tests read its tables.

/// The protocol's writes without an idempotency key.
extension Storage {
    @discardableResult
    func createItem(id: ItemID?, draft: Draft, origin: Origin) async throws -> Replayable<Item> {
        try await createItem(id: id, draft: draft, origin: origin, idempotency: nil)
    }

    @discardableResult
    func createItems(_ items: [BatchItem], origin: Origin) async throws -> Replayable<[ItemCreation]> {
        try await createItems(items, origin: origin, idempotency: nil)
    }

    @discardableResult
    func updateItem(_ id: ItemID, draft: Draft, precondition: VersionPrecondition?, origin: Origin) async throws -> Replayable<Item> {
        try await updateItem(id, draft: draft, precondition: precondition, origin: origin, idempotency: nil)
    }

    @discardableResult
    func deleteItem(_ id: ItemID, precondition: VersionPrecondition?, origin: Origin) async throws -> Replayable<Void> {
        try await deleteItem(id, precondition: precondition, origin: origin, idempotency: nil)
    }

    @discardableResult
    func runCommand(_ command: Command, clientID: ClientID, origin: Origin) async throws -> Replayable<CommandOutcome> {
        try await runCommand(command, clientID: clientID, origin: origin, idempotency: nil)
    }
}

extension Replayable {
    /// The value of a run that was not a replay.
    var fresh: Value? {
        if case .fresh(let value) = self { return value }
        return nil
    }

    /// The stored answer of a replay.
    var replayed: StoredResponse? {
        if case .replayed(let response) = self { return response }
        return nil
    }
}

// MARK: - The log, read through the feed

/// One change entry as the feed delivers it, its JSON value decoded; `at` left out.
struct LoggedChange: Hashable, Sendable, CustomStringConvertible {
    var seq: Int64
    var entity: ChangeEntity
    var op: ChangeOp
    var entityID: String
    var owner: UserID?
    var value: LoggedValue?
    var originClientID: ClientID?
    var originIdempotencyKey: String?

    init(
        seq: Int64, entity: ChangeEntity, op: ChangeOp, entityID: String, owner: UserID?, value: LoggedValue?, originClientID: ClientID?,
        originIdempotencyKey: String?
    ) {
        self.seq = seq
        self.entity = entity
        self.op = op
        self.entityID = entityID
        self.owner = owner
        self.value = value
        self.originClientID = originClientID
        self.originIdempotencyKey = originIdempotencyKey
    }

    init(_ entry: ChangeEntry) throws {
        var value: LoggedValue?
        if let json = entry.valueJSON {
            let data = Data(json.utf8)
            switch entry.entity {
            case .item: value = .item(try JSONCoding.decoder().decode(Item.self, from: data))
            case .navigation: value = .navigation(try JSONCoding.decoder().decode(Navigation.self, from: data))
            case .presence: value = .other(json)
            }
        }
        self.init(
            seq: entry.seq, entity: entry.entity, op: entry.op, entityID: entry.id, owner: entry.owner, value: value,
            originClientID: entry.originClientID, originIdempotencyKey: entry.originIdempotencyKey)
    }

    static func itemUpsert(_ seq: Int64, _ item: Item, _ origin: Origin) -> LoggedChange {
        LoggedChange(
            seq: seq, entity: .item, op: .upsert, entityID: item.id.description, owner: nil, value: .item(item),
            originClientID: origin.clientID, originIdempotencyKey: origin.idempotencyKey)
    }

    static func itemDelete(_ seq: Int64, _ id: ItemID, _ origin: Origin) -> LoggedChange {
        LoggedChange(
            seq: seq, entity: .item, op: .delete, entityID: id.description, owner: nil, value: nil,
            originClientID: origin.clientID, originIdempotencyKey: origin.idempotencyKey)
    }

    static func navigationUpsert(_ seq: Int64, _ navigation: Navigation, owner: UserID, _ origin: Origin) -> LoggedChange {
        LoggedChange(
            seq: seq, entity: .navigation, op: .upsert, entityID: navigation.clientID.rawValue, owner: owner, value: .navigation(navigation),
            originClientID: origin.clientID, originIdempotencyKey: origin.idempotencyKey)
    }

    /// The same entry without its seq, for comparing entries whose relative order the contract leaves open.
    var unsequenced: LoggedChange {
        var copy = self
        copy.seq = 0
        return copy
    }

    var description: String {
        "#\(seq) \(entity).\(op) \(entityID) owner=\(owner.map { "\($0)" } ?? "nil") "
            + "origin=(\(originClientID.map { "\($0)" } ?? "nil"), \(originIdempotencyKey ?? "nil")) value=\(value.map { "\($0)" } ?? "nil")"
    }
}

enum LoggedValue: Hashable, Sendable {
    case item(Item)
    case navigation(Navigation)
    case other(String)
}

/// The item and navigation entries after `seq` that any of `users` may see, in seq order: the
/// whole log of a test whose devices belong to those users.
func loggedChanges(_ storage: any Storage, after seq: Int64 = 0, users: [UserID] = ["erin", "otto"]) async throws -> [LoggedChange] {
    var entries: [Int64: ChangeEntry] = [:]
    for user in users {
        var position = seq
        while true {
            let page = try await storage.readChanges(after: position, filter: FeedFilter(user: user, topics: [.item, .navigation]), limit: 1000)
            for entry in page.changes { entries[entry.seq] = entry }
            position = page.cursor.seq
            if !page.hasMore { break }
        }
    }
    return try entries.keys.sorted().map { try LoggedChange(entries[$0]!) }
}

// MARK: - What a refused write must leave as it was

/// What the protocol shows of a store: the log's head, the live items, and the navigations of
/// `users`. A refused write leaves it equal.
struct Observed: Hashable, Sendable, CustomStringConvertible {
    var head: Int64
    var items: [Item]
    var navigations: [UserID: [Navigation]]

    var description: String { "head \(head), \(items.count) items, navigations \(navigations)" }
}

func observe(_ storage: any Storage, users: [UserID] = ["erin", "otto"]) async throws -> Observed {
    var items: [Item] = []
    var after: PageCursor?
    while true {
        let page = try await storage.listItems(after: after, limit: 500, query: nil, status: nil)
        items += page.items
        guard let next = page.next else { break }
        after = next
    }
    var navigations: [UserID: [Navigation]] = [:]
    for user in users { navigations[user] = try await storage.navigations(user: user) }
    return Observed(head: try await storage.resolve(.now), items: items, navigations: navigations)
}
