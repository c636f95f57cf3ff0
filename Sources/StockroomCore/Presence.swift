import Foundation

/// Whether a device is open now, and when it was last seen: a `presence` change's value, and
/// what a navigation read says of its device.
public struct Presence: Hashable, Sendable {
    /// The device.
    public var clientID: ClientID
    /// Whether a feed request or stream of the device is open now, on any daemon.
    public var online: Bool
    /// The last command or feed request of the device; nil if never seen.
    public var lastSeenAt: Date?

    /// Creates a presence.
    public init(clientID: ClientID, online: Bool, lastSeenAt: Date?) {
        self.clientID = clientID
        self.online = online
        self.lastSeenAt = lastSeenAt
    }
}
