import Foundation

/// The one screen presented over the stack, if any: an enum, so two can never be open at once.
public enum Destination: Hashable, Sendable {
    case add(draft: Draft)
    case edit(itemID: ItemID, baseVersion: Int, draft: Draft)
    case duplicate(itemID: ItemID, draft: Draft)
    case deleteAlert(itemID: ItemID, alert: AlertState)
    /// A save found the item changed since `baseVersion` (`current` is the item now) or deleted
    /// (`current` nil); the draft is kept until the user chooses with the alert's buttons.
    case conflict(itemID: ItemID, baseVersion: Int, draft: Draft, current: Item?, alert: AlertState)

    /// The item the destination is about, if it is about one.
    public var itemID: ItemID? {
        switch self {
        case .add: nil
        case .edit(let id, _, _), .duplicate(let id, _), .deleteAlert(let id, _), .conflict(let id, _, _, _, _): id
        }
    }

    /// The draft the destination holds, if it holds one.
    public var draft: Draft? {
        switch self {
        case .add(let draft), .edit(_, _, let draft), .duplicate(_, let draft), .conflict(_, _, let draft, _, _): draft
        case .deleteAlert: nil
        }
    }

    /// The alert the destination shows, if it is an alert.
    public var alert: AlertState? {
        switch self {
        case .deleteAlert(_, let alert), .conflict(_, _, _, _, let alert): alert
        case .add, .edit, .duplicate: nil
        }
    }

    /// The delete alert of `item`.
    public static func deleteAlert(for item: Item) -> Destination {
        .deleteAlert(itemID: item.id, alert: .deleteItem(name: item.name))
    }

    /// The conflict of an edit of `itemID` whose save found `current` (nil: deleted).
    public static func conflict(itemID: ItemID, baseVersion: Int, draft: Draft, current: Item?) -> Destination {
        .conflict(
            itemID: itemID, baseVersion: baseVersion, draft: draft, current: current,
            alert: .conflict(name: current?.name ?? draft.name, current: current))
    }

    /// The destination with its alert rendered anew from `items`, the live items it may name (a
    /// missing key: deleted): what the server stores whatever alert a client sent.
    public func rendered(items: [ItemID: Item]) -> Destination {
        switch self {
        case .deleteAlert(let id, _):
            return .deleteAlert(itemID: id, alert: .deleteItem(name: items[id]?.name))
        case .conflict(let id, let baseVersion, let draft, _, _):
            return .conflict(itemID: id, baseVersion: baseVersion, draft: draft, current: items[id])
        case .add, .edit, .duplicate:
            return self
        }
    }
}

extension Destination: Codable {
    private enum Kind: String, CodingKey { case add, edit, duplicate, deleteAlert, conflict }
    private enum Fields: String, CodingKey { case itemID, baseVersion, draft, current, alert }

    /// Reads the contract's shape. An alert that is absent (a client's `PUT`, or a state stored before
    /// alerts were data) reads as the one the server renders from what the destination holds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Kind.self)
        guard container.allKeys.count == 1, let kind = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: container.codingPath, debugDescription: "a destination has exactly one of add, edit, duplicate, deleteAlert, conflict"))
        }
        let fields = try container.nestedContainer(keyedBy: Fields.self, forKey: kind)
        switch kind {
        case .add:
            self = .add(draft: try fields.decode(Draft.self, forKey: .draft))
        case .edit:
            self = .edit(
                itemID: try fields.decode(ItemID.self, forKey: .itemID),
                baseVersion: try fields.decode(Int.self, forKey: .baseVersion),
                draft: try fields.decode(Draft.self, forKey: .draft))
        case .duplicate:
            self = .duplicate(itemID: try fields.decode(ItemID.self, forKey: .itemID), draft: try fields.decode(Draft.self, forKey: .draft))
        case .deleteAlert:
            self = .deleteAlert(
                itemID: try fields.decode(ItemID.self, forKey: .itemID),
                alert: try fields.decodeIfPresent(AlertState.self, forKey: .alert) ?? .deleteItem(name: nil))
        case .conflict:
            let itemID = try fields.decode(ItemID.self, forKey: .itemID)
            let baseVersion = try fields.decode(Int.self, forKey: .baseVersion)
            let draft = try fields.decode(Draft.self, forKey: .draft)
            let current = try fields.decodeIfPresent(Item.self, forKey: .current)
            if let alert = try fields.decodeIfPresent(AlertState.self, forKey: .alert) {
                self = .conflict(itemID: itemID, baseVersion: baseVersion, draft: draft, current: current, alert: alert)
            } else {
                self = .conflict(itemID: itemID, baseVersion: baseVersion, draft: draft, current: current)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Kind.self)
        switch self {
        case .add(let draft):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .add)
            try fields.encode(draft, forKey: .draft)
        case .edit(let itemID, let baseVersion, let draft):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .edit)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(baseVersion, forKey: .baseVersion)
            try fields.encode(draft, forKey: .draft)
        case .duplicate(let itemID, let draft):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .duplicate)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(draft, forKey: .draft)
        case .deleteAlert(let itemID, let alert):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .deleteAlert)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(alert, forKey: .alert)
        case .conflict(let itemID, let baseVersion, let draft, let current, let alert):
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: .conflict)
            try fields.encode(itemID, forKey: .itemID)
            try fields.encode(baseVersion, forKey: .baseVersion)
            try fields.encode(draft, forKey: .draft)
            try fields.encode(ExplicitNull(wrappedValue: current), forKey: .current)
            try fields.encode(alert, forKey: .alert)
        }
    }
}
