import Foundation

/// What one device shows: tab, drill-down path, at most one destination, and the named
/// checkpoints along the path.
public struct NavigationState: Hashable, Sendable {
    /// The selected tab.
    public var tab: Tab
    /// The drill-down stack, root first.
    public var path: [Route]
    /// The presented screen, if any.
    public var destination: Destination?
    /// Named depths of the path to return to, by name.
    public var checkpoints: [String: Checkpoint]

    /// Creates a navigation state.
    public init(tab: Tab = .inventory, path: [Route] = [], destination: Destination? = nil, checkpoints: [String: Checkpoint] = [:]) {
        self.tab = tab
        self.path = path
        self.destination = destination
        self.checkpoints = checkpoints
    }

    /// The state of a device that has never written one.
    public static let root = NavigationState()

    /// The deepest drill-down path a state may hold: pushes beyond it are refused, so a stored
    /// state (and every change entry and answer carrying it) stays a few KiB at most.
    public static let maxPathDepth = 32

    /// The canonical deep link of the state.
    public var url: String { DeepLink(self).description }

    /// Throws when the state is larger than a device may hold or names a checkpoint it cannot: a
    /// path deeper than `maxPathDepth`, a draft with a field longer than an item may have, more
    /// checkpoints than `Checkpoint.maxCount`, or one deeper than the path or with too large a value.
    public func checkSize() throws(DomainError) {
        guard path.count <= Self.maxPathDepth else {
            throw .validationFailed(field: "path", message: "path may hold at most \(Self.maxPathDepth) routes")
        }
        try destination?.draft?.checkSize()
        guard checkpoints.count <= Checkpoint.maxCount else {
            throw .validationFailed(field: "checkpoints", message: "a state may hold at most \(Checkpoint.maxCount) checkpoints")
        }
        for (name, checkpoint) in checkpoints {
            try Checkpoint.checkName(name, field: "checkpoints")
            guard (0...path.count).contains(checkpoint.depth) else {
                throw .validationFailed(field: "checkpoints", message: "checkpoint depth must be between 0 and the path's length")
            }
            try checkpoint.value?.checkSize(field: "checkpoints")
        }
    }

    /// Every item this state points at, in order of first mention. One array, and a repeat found by
    /// scanning it rather than through a set: a path holds at most `maxPathDepth` routes and most
    /// hold one or two, and every command's write asks for this of its state before and after.
    public var referencedItemIDs: [ItemID] {
        pathItemIDs(then: destination?.itemID)
    }

    /// The state with its alert rendered anew from `items`, the live items it names: what a
    /// replacement stores, whatever alert (or `current` item) the client sent.
    public func rendered(items: [ItemID: Item]) -> NavigationState {
        var state = self
        state.destination = destination?.rendered(items: items)
        return state
    }

    /// The state with the checkpoints deeper than the path dropped: popping above a checkpoint removes it.
    public func prunedCheckpoints() -> NavigationState {
        guard checkpoints.values.contains(where: { $0.depth > path.count }) else { return self }
        var state = self
        state.checkpoints = checkpoints.filter { $0.value.depth <= path.count }
        return state
    }

    /// The items whose delete changes this state (`repaired(afterDeleting:)`), each once, in order
    /// of first mention: the path's, a delete alert's, and a conflict's that still shows the item.
    /// A store keeps these as a device's item references, by which a delete finds the devices to
    /// repair. An edit or a duplicate stays as it is when its item goes, so it adds none: opening
    /// and saving an edit leave the references as they were.
    public var repairableItemIDs: [ItemID] {
        switch destination {
        case .deleteAlert(let id, _), .conflict(let id, _, _, .some, _):
            pathItemIDs(then: id)
        case .add, .edit, .duplicate, .conflict(_, _, _, .none, _), nil:
            pathItemIDs(then: nil)
        }
    }

    /// The path's items, then `last`, each once, in order of first mention.
    private func pathItemIDs(then last: ItemID?) -> [ItemID] {
        var ids: [ItemID] = []
        ids.reserveCapacity(path.count + 1)
        for route in path where !ids.contains(route.itemID) {
            ids.append(route.itemID)
        }
        if let last, !ids.contains(last) { ids.append(last) }
        return ids
    }

    /// This state after `id` was deleted: its routes go (and checkpoints deeper than what is
    /// left), a delete alert for it closes, an edit or duplicate of it stays open so that no typed
    /// draft is lost, and a conflict over it now says the item was deleted.
    public func repaired(afterDeleting id: ItemID) -> NavigationState {
        var state = self
        state.path.removeAll { $0.itemID == id }
        switch state.destination {
        case .deleteAlert(id, _):
            state.destination = nil
        case .conflict(id, let baseVersion, let draft, .some, _):
            state.destination = .conflict(itemID: id, baseVersion: baseVersion, draft: draft, current: nil)
        default:
            break
        }
        return state.prunedCheckpoints()
    }
}
