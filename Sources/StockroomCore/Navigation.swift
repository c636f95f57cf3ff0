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
