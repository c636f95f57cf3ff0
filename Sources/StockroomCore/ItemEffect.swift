import Foundation

/// What a command does to items, decided by the domain and carried out by the store.
public enum ItemEffect: Hashable, Sendable {
    /// Nothing happens to any item.
    case none
    /// A new item is inserted from the draft.
    case insert(ValidDraft)
    /// The item, still at `expectedVersion`, takes the draft's fields.
    case update(ItemID, ValidDraft, expectedVersion: Int)
    /// The item is deleted and every navigation state pointing at it is repaired.
    case delete(ItemID)
}
