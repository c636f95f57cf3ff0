import Foundation

/// The one screen presented over the stack, if any: an enum, so two can never be open at once.
public enum Destination: Hashable, Sendable, Codable {
    case add(draft: Draft)
    case edit(itemID: ItemID, baseVersion: Int, draft: Draft)
    case duplicate(itemID: ItemID, draft: Draft)
    case deleteAlert(itemID: ItemID)

    /// The item the destination is about, if it is about one.
    public var itemID: ItemID? {
        switch self {
        case .add: nil
        case .edit(let id, _, _), .duplicate(let id, _), .deleteAlert(let id): id
        }
    }

    /// The draft the destination holds, if it holds one.
    public var draft: Draft? {
        switch self {
        case .add(let draft), .edit(_, _, let draft), .duplicate(_, let draft): draft
        case .deleteAlert: nil
        }
    }
}
