import Foundation

/// The one screen presented over the stack, if any: an enum, so two can never be open at once.
/// `indirect`: each case's values live in a box of their own, so a `Destination` (and every
/// `NavigationState` holding one) is a pointer wide instead of the conflict case's ~300 bytes, which
/// each copy of a state, and each async frame of the write rules holding one, would carry.
public indirect enum Destination: Hashable, Sendable {
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
