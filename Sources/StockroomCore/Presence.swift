import Foundation

/// Whether a device is open now, and when it was last seen: a `presence` change's value, and
/// what a navigation read says of its device.
public struct Presence: Hashable, Sendable, Codable {
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

    private enum CodingKeys: String, CodingKey { case clientID, online, lastSeenAt }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(clientID, forKey: .clientID)
        try c.encode(online, forKey: .online)
        try c.encode(lastSeenAt, forKey: .lastSeenAt)
    }
}
