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
/// online to no one. The store publishes a `presence` change when a device's online state differs
/// from the last one published, at most once per device per `PresenceTick.coalescing`; a flip
/// inside that window is published by a later tick.
public struct PresenceTick: Sendable, Hashable {
    /// The daemon's id (random per process).
    public var daemon: String
    /// Now.
    public var now: Date
    /// When this daemon's leases expire unless renewed.
    public var leaseUntil: Date
    /// Devices whose command or feed request arrived, with the caller's user: when, the latest.
    public var seen: [Holder: Date]
    /// Devices whose first feed request or stream of a user on this daemon opened.
    public var opened: Set<Holder>
    /// Devices whose last feed request or stream of a user on this daemon closed.
    public var closed: Set<Holder>
    /// Whether to renew every lease of this daemon to `leaseUntil`.
    public var renewLeases: Bool

    /// A device and a user whose requests name it: what a sighting is of, and a lease held for.
    /// In client_id order, then user (the order the stores apply and lock them in).
    public struct Holder: Sendable, Hashable, Comparable {
        public var clientID: ClientID
        public var user: UserID

        public init(_ clientID: ClientID, _ user: UserID) {
            self.clientID = clientID
            self.user = user
        }

        public static func < (a: Holder, b: Holder) -> Bool {
            (a.clientID.rawValue, a.user.rawValue) < (b.clientID.rawValue, b.user.rawValue)
        }
    }

    /// The least time between two presence changes of one device.
    public static let coalescing: Duration = .seconds(1)

    /// Creates a tick.
    public init(
        daemon: String, now: Date, leaseUntil: Date, seen: [Holder: Date] = [:], opened: Set<Holder> = [],
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
    /// A new device sighted with several users becomes one row, the first admitted user's (the
    /// stores give it to the first in holder order): only that user's room counts it.
    public static func admitted(
        _ sightings: [Holder: Date], known: Set<ClientID>, seenCount: [UserID: Int], limit: Int
    ) -> [Holder: Date] {
        var room = seenCount.mapValues { max(0, limit - $0) }
        var admitted = sightings.filter { known.contains($0.key.clientID) }
        var rowGiven = Set<ClientID>()
        for (holder, at) in sightings.filter({ !known.contains($0.key.clientID) }).sorted(by: { $0.key < $1.key }) {
            let left = room[holder.user, default: limit]
            guard left > 0, !rowGiven.contains(holder.clientID) else { continue }
            room[holder.user] = left - 1
            rowGiven.insert(holder.clientID)
            admitted[holder] = at
        }
        return admitted
    }

    /// The sightings to record: `seen`, and each device a user opened a feed of and was not seen
    /// with otherwise, at `now`.
    public var sightings: [Holder: Date] {
        var sightings = seen
        for holder in opened where sightings[holder] == nil { sightings[holder] = now }
        return sightings
    }

    /// The milliseconds of `coalescing`.
    public static var coalescingMilliseconds: Int64 { coalescing.components.seconds * 1000 }
}
