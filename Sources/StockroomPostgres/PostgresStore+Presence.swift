import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage
import StockroomWire

extension PostgresStore {
    @discardableResult
    public func recordPresence(_ tick: PresenceTick) async throws -> Bool {
        try await write { write in
            let now = Timestamp.milliseconds(tick.now)
            let until = Timestamp.milliseconds(tick.leaseUntil)
            var sightings = tick.seen
            for (id, user) in tick.opened where sightings[id] == nil { sightings[id] = .init(user: user, at: tick.now) }
            // A device is first seen with its user; a sighting by another user does not take it over.
            for (id, sighting) in sightings.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                try await write.query(
                    """
                    INSERT INTO devices_seen (client_id, owner, last_seen_at) VALUES (\(id.rawValue), \(sighting.user.rawValue), \(Timestamp.milliseconds(sighting.at)))
                    ON CONFLICT (client_id) DO UPDATE SET last_seen_at = greatest(devices_seen.last_seen_at, excluded.last_seen_at)
                    WHERE devices_seen.owner = excluded.owner
                    """)
            }
            for id in tick.opened.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                try await write.query(
                    """
                    INSERT INTO presence_leases (client_id, daemon, expires_at) VALUES (\(id.rawValue), \(tick.daemon), \(until))
                    ON CONFLICT (client_id, daemon) DO UPDATE SET expires_at = excluded.expires_at
                    """)
            }
            for id in tick.closed.sorted(by: { $0.rawValue < $1.rawValue }) {
                try await write.query("DELETE FROM presence_leases WHERE client_id = \(id.rawValue) AND daemon = \(tick.daemon)")
            }
            if tick.renewLeases {
                try await write.query("UPDATE presence_leases SET expires_at = \(until) WHERE daemon = \(tick.daemon)")
            }
            var candidates = Set(tick.opened.keys.map(\.rawValue)).union(tick.closed.map(\.rawValue))
            for row in try await write.query("DELETE FROM presence_leases WHERE expires_at <= \(now) RETURNING client_id") {
                candidates.insert(try row.decode(String.self))
            }
            for row in try await write.query("SELECT client_id FROM devices_seen WHERE pending") {
                candidates.insert(try row.decode(String.self))
            }
            var waiting = false
            // In client_id order, each row locked: two daemons deciding one device take turns.
            for id in candidates.sorted() {
                guard
                    let row = try await write.query(
                        """
                        SELECT owner, last_seen_at, online, published_at, pending,
                               EXISTS (SELECT 1 FROM presence_leases l WHERE l.client_id = d.client_id AND l.expires_at > \(now))
                        FROM devices_seen d WHERE client_id = \(id) FOR UPDATE
                        """
                    ).first
                else { continue }
                let (owner, lastSeen, published, publishedAt, pending, live) = try row.decode((String, Int64, Bool, Int64, Bool, Bool).self)
                if live == published {
                    if pending { try await write.query("UPDATE devices_seen SET pending = false WHERE client_id = \(id)") }
                    continue
                }
                guard publishedAt + PresenceTick.coalescingMilliseconds <= now else {
                    try await write.query("UPDATE devices_seen SET pending = true WHERE client_id = \(id)")
                    waiting = true
                    continue
                }
                let user = UserID(stored: owner)
                let clientID = ClientID(stored: id)
                write.append(
                    entity: .presence, op: .upsert, id: id, owner: user,
                    value: Presence(clientID: clientID, online: live, lastSeenAt: Timestamp.date(milliseconds: lastSeen)),
                    origin: Origin(user: user, clientID: clientID), at: now)
                try await write.query("UPDATE devices_seen SET online = \(live), published_at = \(now), pending = false WHERE client_id = \(id)")
            }
            return waiting
        }
    }

    public func presence(of clientIDs: [ClientID], user: UserID, now: Date) async throws -> [ClientID: Presence] {
        guard !clientIDs.isEmpty else { return [:] }
        let now = Timestamp.milliseconds(now)
        let ids = clientIDs.map(\.rawValue)
        return try await read { connection in
            var presence = Dictionary(uniqueKeysWithValues: clientIDs.map { ($0, Presence(clientID: $0, online: false, lastSeenAt: nil)) })
            let rows = try await connection.query(
                """
                SELECT client_id, last_seen_at,
                       EXISTS (SELECT 1 FROM presence_leases l WHERE l.client_id = d.client_id AND l.expires_at > \(now))
                FROM devices_seen d WHERE client_id = ANY(\(ids)) AND owner = \(user.rawValue)
                """, logger: self.logger)
            for try await (id, lastSeen, live) in rows.decode((String, Int64, Bool).self) {
                let clientID = ClientID(stored: id)
                presence[clientID] = Presence(clientID: clientID, online: live, lastSeenAt: Timestamp.date(milliseconds: lastSeen))
            }
            return presence
        }
    }

    public func removeStaleDevices(notSeenSince cutoff: Date, limit: Int) async throws -> Int {
        let cutoff = Timestamp.milliseconds(cutoff)
        let now = Timestamp.milliseconds(Date())
        return try await write { write in
            // Neither written nor seen since the cutoff, and no feed of it open anywhere; locked, so
            // that a command of the device waits and then finds it gone (and starts afresh).
            let stale = try await write.query(
                """
                SELECT c.client_id, c.owner FROM clients c LEFT JOIN devices_seen d ON d.client_id = c.client_id
                WHERE c.updated_at < \(cutoff) AND (d.last_seen_at IS NULL OR d.last_seen_at < \(cutoff))
                  AND NOT EXISTS (SELECT 1 FROM presence_leases l WHERE l.client_id = c.client_id AND l.expires_at > \(now))
                ORDER BY c.client_id LIMIT \(Int64(limit))
                FOR UPDATE OF c SKIP LOCKED
                """
            ).map { try $0.decode((String, String).self) }
            for (id, owner) in stale {
                try await write.query("DELETE FROM clients WHERE client_id = \(id)")
                try await write.query("DELETE FROM devices_seen WHERE client_id = \(id)")
                let user = UserID(stored: owner)
                write.append(
                    entity: .navigation, op: .delete, id: id, owner: user, value: Navigation?.none,
                    origin: Origin(user: user, clientID: ClientID(stored: id)), at: now)
            }
            // Devices seen but never written go without a change: there is no navigation to delete.
            try await write.query(
                """
                DELETE FROM devices_seen d WHERE d.last_seen_at < \(cutoff)
                  AND NOT EXISTS (SELECT 1 FROM clients c WHERE c.client_id = d.client_id)
                  AND NOT EXISTS (SELECT 1 FROM presence_leases l WHERE l.client_id = d.client_id AND l.expires_at > \(now))
                """)
            return stale.count
        }
    }
}
