import Foundation
import StockroomCore
import StockroomWire
import Synchronization

/// One committed change, as the log keeps it.
public struct ChangeEntry: Sendable, Hashable {
    /// Commit-order position, without gaps.
    public var seq: Int64
    /// What kind of entity changed.
    public var entity: ChangeEntity
    /// Written or deleted.
    public var op: ChangeOp
    /// The item id or clientID.
    public var id: String
    /// The user a navigation change belongs to.
    public var owner: UserID?
    /// The JSON of the Item or Navigation after the change; nil for a delete.
    public var valueJSON: String?
    /// For an item change, what the item was before it (`ItemBefore`): what a filtered feed needs
    /// to tell a move out of its filter from a change it never showed.
    public var before: ItemBefore
    /// The device that caused it.
    public var originClientID: ClientID?
    /// The Idempotency-Key of the request that caused it.
    public var originIdempotencyKey: String?
    /// When it was committed (milliseconds since 1970).
    public var at: Int64

    /// The contract's `Change` JSON object, encoded once when the entry is read.
    public var json: String
    /// Set on the entry a filtered feed sends for an item crossing its filter (`FeedFilter.shown`):
    /// its `json` then differs from the log's entry of the same seq.
    public private(set) var move: ChangeMove?

    /// The database epoch its cursor names.
    let epoch: String

    /// Where an item entry's items (before and after) are kept once decoded, shared by every copy
    /// of the entry, so that a thousand filtered feeds decode a change once: given by the hub to
    /// the entries it keeps while filtered feeds are open (`ChangeHub.committed`); nil elsewhere,
    /// where a filter decodes the entry it reads (`decodedItems`).
    var items: DecodedItems?

    /// An entry read from a log, its JSON encoded for `epoch`.
    public init(
        seq: Int64, entity: ChangeEntity, op: ChangeOp, id: String, owner: UserID?, valueJSON: String?, before: ItemBefore = .none,
        originClientID: ClientID?, originIdempotencyKey: String?, at: Int64, epoch: String
    ) {
        self.seq = seq
        self.entity = entity
        self.op = op
        self.id = id
        self.owner = owner
        self.valueJSON = valueJSON
        self.before = before
        self.originClientID = originClientID
        self.originIdempotencyKey = originIdempotencyKey
        self.at = at
        self.epoch = epoch
        items = nil
        json = Self.json(
            seq: seq, epoch: epoch, entity: entity, op: op, id: id, valueJSON: valueJSON,
            originClientID: originClientID?.rawValue, originIdempotencyKey: originIdempotencyKey, at: at)
    }

    /// The entry as a filtered feed sends an item crossing its filter: `in`, the upsert with
    /// `"move": "in"`; `out`, a delete with no value and `"move": "out"`.
    func moved(_ move: ChangeMove) -> ChangeEntry {
        var moved = self
        moved.move = move
        if move == .out {
            moved.op = .delete
            moved.valueJSON = nil
        }
        moved.json = Self.json(
            seq: seq, epoch: epoch, entity: entity, op: moved.op, id: id, valueJSON: moved.valueJSON,
            originClientID: originClientID?.rawValue, originIdempotencyKey: originIdempotencyKey, at: at, move: move)
        return moved
    }

    /// The `Change` JSON of an entry, built from the stored value without re-encoding it.
    public static func json(
        seq: Int64, epoch: String, entity: ChangeEntity, op: ChangeOp, id: String, valueJSON: String?,
        originClientID: String?, originIdempotencyKey: String?, at: Int64, move: ChangeMove? = nil
    ) -> String {
        var json = JSONWriter(capacity: 160 + (valueJSON?.utf8.count ?? 4))
        ChangeJSON.write(
            seq: seq, epoch: epoch.utf8, entity: entity.rawValue, op: op.rawValue, id: id, value: valueJSON?.utf8,
            originClientID: originClientID, originIdempotencyKey: originIdempotencyKey, at: at, move: move, to: &json)
        return json.string
    }
}

extension ChangeEntry {
    /// An item entry's items before and after the change, from the hub's cache when it keeps one.
    var decodedItems: DecodedItems.Pair {
        items?.get(self) ?? DecodedItems.decode(self)
    }
}

/// What an item was before a change, as the log records it.
public enum ItemBefore: Sendable, Hashable {
    /// No item: a create, or an entry that is not an item's.
    case none
    /// The item's JSON as it was.
    case item(json: String)
    /// Not recorded: the entry was written before the log kept the item before a change
    /// (`previous` holds `ItemBefore.unknownMark`). A filter treats it as matched.
    case unknown

    /// What the `previous` column holds for an entry written before it existed.
    public static let unknownMark = "?"

    /// The value the `previous` column holds for it.
    public var stored: String? {
        switch self {
        case .none: nil
        case .item(let json): json
        case .unknown: Self.unknownMark
        }
    }

    /// The value of a `previous` column.
    public init(stored: String?) {
        switch stored {
        case nil: self = .none
        case Self.unknownMark?: self = .unknown
        case let json?: self = .item(json: json)
        }
    }
}

/// An item entry's decoded items: a cache, not part of the entry's value (every copy of an entry
/// has the same JSON, so equal entries decode to equal items).
final class DecodedItems: Sendable, Hashable {
    /// The item after the change (nil for a delete) and before it (nil: none; `unknown`: not recorded).
    struct Pair: Sendable {
        var after: Item?
        var before: Item?
        var beforeUnknown: Bool
    }

    private let pair = Mutex<Pair?>(nil)

    func get(_ entry: ChangeEntry) -> Pair {
        if let decoded = pair.withLock({ $0 }) { return decoded }
        let decoded = Self.decode(entry)
        pair.withLock { $0 = decoded }
        return decoded
    }

    static func decode(_ entry: ChangeEntry) -> Pair {
        var before: Item?
        if case .item(let json) = entry.before { before = decode(json) }
        return Pair(after: entry.valueJSON.flatMap(decode), before: before, beforeUnknown: entry.before == .unknown)
    }

    private static func decode(_ json: String) -> Item? {
        try? JSONCoding.decoder().decode(Item.self, from: Data(json.utf8))
    }

    static func == (lhs: DecodedItems, rhs: DecodedItems) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
