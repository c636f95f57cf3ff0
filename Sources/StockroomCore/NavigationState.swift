import Foundation

/// What one device shows: tab, drill-down path and at most one destination.
public struct NavigationState: Hashable, Sendable, Codable {
    /// The selected tab.
    public var tab: Tab
    /// The drill-down stack, root first.
    public var path: [Route]
    /// The presented screen, if any.
    @ExplicitNull public var destination: Destination?

    /// Creates a navigation state.
    public init(tab: Tab = .inventory, path: [Route] = [], destination: Destination? = nil) {
        self.tab = tab
        self.path = path
        self.destination = destination
    }

    /// The state of a device that has never written one.
    public static let root = NavigationState()

    /// The deepest drill-down path a state may hold: pushes beyond it are refused, so a stored
    /// state (and every change entry and answer carrying it) stays a few KiB at most.
    public static let maxPathDepth = 32

    /// Throws when the state is larger than a device may hold: a path deeper than
    /// `maxPathDepth`, or a draft with a field longer than an item may have.
    public func checkSize() throws(DomainError) {
        guard path.count <= Self.maxPathDepth else {
            throw .validationFailed(field: "path", message: "path may hold at most \(Self.maxPathDepth) routes")
        }
        try destination?.draft?.checkSize()
    }

    /// Every item this state points at, in order of first mention.
    public var referencedItemIDs: [ItemID] {
        var seen = Set<ItemID>()
        return (path.map(\.itemID) + [destination?.itemID].compactMap { $0 }).filter { seen.insert($0).inserted }
    }

    /// This state after `id` was deleted: its routes go, a delete alert for it closes,
    /// and an edit or duplicate of it stays open so that no typed draft is lost.
    public func repaired(afterDeleting id: ItemID) -> NavigationState {
        var state = self
        state.path.removeAll { $0.itemID == id }
        if case .deleteAlert(id) = state.destination { state.destination = nil }
        return state
    }
}
