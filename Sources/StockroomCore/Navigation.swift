import Foundation

/// The app's top-level tabs.
public enum Tab: String, Hashable, Sendable, Codable, CaseIterable {
    case inventory
    case settings
}

/// One entry of the drill-down stack.
public enum Route: Hashable, Sendable, Codable {
    /// The detail screen of an item.
    case item(id: ItemID)

    /// The item this route shows.
    public var itemID: ItemID {
        switch self {
        case .item(let id): id
        }
    }
}

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

/// A device's navigation state as stored, with its version.
public struct Navigation: Hashable, Sendable {
    /// The device's identifier.
    public var clientID: ClientID
    /// What the device shows.
    public var state: NavigationState
    /// 0 for a device never written; grows by one on every change.
    public var version: Int
    /// When the state last changed; nil for a device never written.
    public var updatedAt: Date?

    /// Creates a navigation record.
    public init(clientID: ClientID, state: NavigationState, version: Int, updatedAt: Date?) {
        self.clientID = clientID
        self.state = state
        self.version = version
        self.updatedAt = updatedAt
    }

    /// The root state of a device that has never been written.
    public static func unwritten(clientID: ClientID) -> Navigation {
        Navigation(clientID: clientID, state: .root, version: 0, updatedAt: nil)
    }
}

extension Navigation: Codable {
    private enum CodingKeys: String, CodingKey { case clientID, tab, path, destination, version, updatedAt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            clientID: try c.decode(ClientID.self, forKey: .clientID),
            state: NavigationState(
                tab: try c.decode(Tab.self, forKey: .tab),
                path: try c.decode([Route].self, forKey: .path),
                destination: try c.decodeIfPresent(Destination.self, forKey: .destination)
            ),
            version: try c.decode(Int.self, forKey: .version),
            updatedAt: try c.decodeIfPresent(Date.self, forKey: .updatedAt)
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(clientID, forKey: .clientID)
        try c.encode(state.tab, forKey: .tab)
        try c.encode(state.path, forKey: .path)
        try c.encode(state.destination, forKey: .destination)
        try c.encode(version, forKey: .version)
        try c.encode(updatedAt, forKey: .updatedAt)
    }
}

