import Foundation
import StockroomCore

/// `GET /v1/users/me/navigation`: every device of the user that has written its navigation, the
/// most recently changed first, each with its presence (`online`, `lastSeenAt`).
public struct NavigationList: Hashable, Sendable {
    public var clients: [Navigation]
    /// Each listed device's presence; a device without one reads as offline, never seen.
    public var presence: [ClientID: Presence]

    public init(clients: [Navigation], presence: [ClientID: Presence] = [:]) {
        self.clients = clients
        self.presence = presence
    }
}

/// A navigation with its device's presence: a navigation read's answer, `Navigation`'s fields
/// and `lastSeenAt` and `online`.
public struct PresentNavigation: Hashable, Sendable {
    public var navigation: Navigation
    public var presence: Presence

    public init(navigation: Navigation, presence: Presence?) {
        self.navigation = navigation
        self.presence = presence ?? Presence(clientID: navigation.clientID, online: false, lastSeenAt: nil)
    }
}

extension PresentNavigation: Codable, JSONWritable {
    private enum PresenceKeys: String, CodingKey { case online, lastSeenAt }

    /// A read without presence (a server from before it) reads as offline, never seen.
    public init(from decoder: any Decoder) throws {
        let presence = try decoder.container(keyedBy: PresenceKeys.self).contains(.online) ? try Presence(from: decoder) : nil
        self.init(navigation: try Navigation(from: decoder), presence: presence)
    }

    public func encode(to encoder: any Encoder) throws {
        try navigation.encode(to: encoder)
        var c = encoder.container(keyedBy: PresenceKeys.self)
        try c.encode(presence.online, forKey: .online)
        try c.encode(presence.lastSeenAt, forKey: .lastSeenAt)
    }

    public func write(to json: inout JSONWriter) {
        navigation.write(to: &json)
        json.truncate(to: json.bytes.count - 1)
        json.raw(#","lastSeenAt":"#)
        json.timestamp(presence.lastSeenAt)
        json.raw(#","online":"#)
        json.bool(presence.online)
        json.raw("}")
    }
}

extension NavigationList: Codable, JSONWritable {
    private enum CodingKeys: String, CodingKey { case clients }

    public init(from decoder: any Decoder) throws {
        let entries = try decoder.container(keyedBy: CodingKeys.self).decode([PresentNavigation].self, forKey: .clients)
        self.init(
            clients: entries.map(\.navigation),
            presence: Dictionary(entries.map { ($0.navigation.clientID, $0.presence) }, uniquingKeysWith: { $1 }))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entries, forKey: .clients)
    }

    public func write(to json: inout JSONWriter) {
        json.raw(#"{"clients":"#)
        json.array(entries)
        json.raw("}")
    }

    private var entries: [PresentNavigation] {
        clients.map { PresentNavigation(navigation: $0, presence: presence[$0.clientID]) }
    }
}
