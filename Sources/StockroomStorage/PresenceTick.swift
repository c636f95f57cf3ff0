import Foundation
import StockroomCore

/// One daemon's presence news since its last tick, written in one transaction by
/// `Storage.recordPresence`: devices seen, feed requests and streams opened and closed, and the
/// daemon's leases renewed.
///
/// A device is online while any daemon holds an unexpired lease on it for the device's owner; a
/// daemon holds one for a user while a feed request or stream of that user naming the device is
/// open on it, renews its leases before they expire, and a daemon that dies leaves leases that
/// expire. Another user's feed naming the device holds a lease of its own, which makes the device
/// online to no one. The store publishes a `presence` change when
/// a device's online state differs from the last one published, at most once per device per
/// `PresenceTick.coalescing`; a flip inside that window is published by a later tick.
public struct PresenceTick: Sendable, Hashable {
    /// The daemon's id (random per process).
    public var daemon: String
    /// Now.
    public var now: Date
    /// When this daemon's leases expire unless renewed.
    public var leaseUntil: Date
    /// Devices whose command or feed request arrived, with the caller's user and when.
    public var seen: [ClientID: Sighting]
    /// Devices whose first feed request or stream of a user on this daemon opened.
    public var opened: Set<Holder>
    /// Devices whose last feed request or stream of a user on this daemon closed.
    public var closed: Set<Holder>
    /// Whether to renew every lease of this daemon to `leaseUntil`.
    public var renewLeases: Bool

    /// A device seen by a user at a time.
    public struct Sighting: Sendable, Hashable {
        public var user: UserID
        public var at: Date

        public init(user: UserID, at: Date) {
            self.user = user
            self.at = at
        }
    }

    /// A device and a user whose feed requests or streams name it: what a lease is held for.
    public struct Holder: Sendable, Hashable {
        public var clientID: ClientID
        public var user: UserID

        public init(_ clientID: ClientID, _ user: UserID) {
            self.clientID = clientID
            self.user = user
        }
    }

    /// The least time between two presence changes of one device.
    public static let coalescing: Duration = .seconds(1)

    /// Creates a tick.
    public init(
        daemon: String, now: Date, leaseUntil: Date, seen: [ClientID: Sighting] = [:], opened: Set<Holder> = [],
        closed: Set<Holder> = [], renewLeases: Bool = false
    ) {
        self.daemon = daemon
        self.now = now
        self.leaseUntil = leaseUntil
        self.seen = seen
        self.opened = opened
        self.closed = closed
        self.renewLeases = renewLeases
    }

    /// The sightings a store records, by the rule both stores share: every sighting of a device
    /// it already knows (`known`: seen or written before), and of devices new to it only as many
    /// per user as keep that user's devices seen (`seenCount`) under `limit` (the store's
    /// `clientsPerUser`), taken in client_id order. So a user who names fresh `clientID`s on feed
    /// requests without writing them adds at most `limit` rows and presence changes, not one per name.
    public static func admitted(
        _ sightings: [ClientID: Sighting], known: Set<ClientID>, seenCount: [UserID: Int], limit: Int
    ) -> [ClientID: Sighting] {
        var room = seenCount.mapValues { max(0, limit - $0) }
        var admitted = sightings.filter { known.contains($0.key) }
        for (id, sighting) in sightings.filter({ !known.contains($0.key) }).sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let left = room[sighting.user, default: limit]
            guard left > 0 else { continue }
            room[sighting.user] = left - 1
            admitted[id] = sighting
        }
        return admitted
    }

    /// The sightings to record: `seen`, and each device opened that was not seen otherwise, by
    /// the user who opened it (the first in user order, when several did).
    public var sightings: [ClientID: Sighting] {
        var sightings = seen
        for holder in opened.sorted(by: { $0.user.rawValue < $1.user.rawValue }) where sightings[holder.clientID] == nil {
            sightings[holder.clientID] = Sighting(user: holder.user, at: now)
        }
        return sightings
    }

    /// The milliseconds of `coalescing`.
    public static var coalescingMilliseconds: Int64 { coalescing.components.seconds * 1000 }
}
