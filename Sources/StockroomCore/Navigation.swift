import Foundation

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
    private enum CodingKeys: String, CodingKey { case clientID, tab, path, destination, checkpoints, url, version, updatedAt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            clientID: try c.decode(ClientID.self, forKey: .clientID),
            state: NavigationState(
                tab: try c.decode(Tab.self, forKey: .tab),
                path: try c.decode([Route].self, forKey: .path),
                destination: try c.decodeIfPresent(Destination.self, forKey: .destination),
                checkpoints: try c.decodeIfPresent([String: Checkpoint].self, forKey: .checkpoints) ?? [:]
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
        try c.encode(state.checkpoints, forKey: .checkpoints)
        try c.encode(state.url, forKey: .url)
        try c.encode(version, forKey: .version)
        try c.encode(updatedAt, forKey: .updatedAt)
    }
}
