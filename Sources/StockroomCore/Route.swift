import Foundation

/// One entry of the drill-down stack.
public enum Route: Hashable, Sendable {
    /// The detail screen of an item.
    case item(id: ItemID)

    /// The item this route shows.
    public var itemID: ItemID {
        switch self {
        case .item(let id): id
        }
    }
}
