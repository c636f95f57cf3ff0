import Foundation
import GRDB
import StockroomCore
import StockroomStorage

extension AppDatabase {
    @discardableResult
    public func recordPresence(_ tick: PresenceTick) async throws -> Bool {
        try await write { [self] db in try applyPresence(db, tick) }
    }

    /// `recordPresence` inside the caller's transaction.
    func applyPresence(_ db: Database, _ tick: PresenceTick) throws -> Bool {
        var waiting = false
        let now = Timestamp.milliseconds(tick.now)
        let until = Timestamp.milliseconds(tick.leaseUntil)
        let sightings = try admitted(db, tick.sightings)
        // A device belongs to the user who wrote it (`clients.owner`); one never written, to the
        // user first seen with it. Another user's sighting or lease takes nothing over, except
        // that the writer's own sighting takes back a device someone else was seen with before it
        // was written: then its presence is published afresh, to the writer (`pending`). A lease
        // is its holder's, and only the owner's make the device online.
        // Every statement is prepared once per connection (`cachedStatement`): a tick runs some of
        // them once per device, and preparing one costs more than running it.
        let see = try db.cachedStatement(
            sql: """
                INSERT INTO devices_seen (client_id, owner, last_seen_at)
                SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM clients WHERE client_id = ?1 AND owner <> ?2)
                ON CONFLICT (client_id) DO UPDATE SET
                    last_seen_at = CASE WHEN owner = excluded.owner THEN max(last_seen_at, excluded.last_seen_at) ELSE excluded.last_seen_at END,
                    online = online AND owner = excluded.owner,
                    published_at = CASE WHEN owner = excluded.owner THEN published_at ELSE 0 END,
                    pending = pending OR owner <> excluded.owner,
                    owner = excluded.owner
                WHERE owner = excluded.owner OR EXISTS (SELECT 1 FROM clients WHERE client_id = ?1 AND owner = ?2)
                """)
        for (holder, at) in sightings.sorted(by: { $0.key < $1.key }) {
            try see.execute(arguments: [holder.clientID.rawValue, holder.user.rawValue, Timestamp.milliseconds(at)])
        }
        if !tick.opened.isEmpty {
            let lease = try db.cachedStatement(
                sql: """
                    INSERT INTO presence_leases (client_id, daemon, expires_at, owner)
                    SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM clients WHERE client_id = ?1 AND owner <> ?4)
                    ON CONFLICT (client_id, daemon, owner) DO UPDATE SET expires_at = excluded.expires_at
                    """)
            for holder in tick.opened { try lease.execute(arguments: [holder.clientID.rawValue, tick.daemon, until, holder.user.rawValue]) }
        }
        if !tick.closed.isEmpty {
            let release = try db.cachedStatement(sql: "DELETE FROM presence_leases WHERE client_id = ? AND daemon = ? AND owner = ?")
            for holder in tick.closed { try release.execute(arguments: [holder.clientID.rawValue, tick.daemon, holder.user.rawValue]) }
        }
        if tick.renewLeases {
            try db.cachedStatement(sql: "UPDATE presence_leases SET expires_at = ? WHERE daemon = ?").execute(arguments: [until, tick.daemon])
        }
        let expired = try String.fetchAll(
            db.cachedStatement(sql: "DELETE FROM presence_leases WHERE expires_at <= ? RETURNING client_id"), arguments: [now])
        var candidates = Set(tick.opened.map(\.clientID.rawValue)).union(tick.closed.map(\.clientID.rawValue)).union(expired)
        candidates.formUnion(try String.fetchAll(db.cachedStatement(sql: "SELECT client_id FROM devices_seen WHERE pending = 1")))
        guard !candidates.isEmpty else { return false }
        let read = try db.cachedStatement(sql: "SELECT owner, last_seen_at, online, published_at, pending FROM devices_seen WHERE client_id = ?")
        let isLive = try db.cachedStatement(
            sql: "SELECT EXISTS (SELECT 1 FROM presence_leases WHERE client_id = ? AND owner = ? AND expires_at > ?)")
        let setPending = try db.cachedStatement(sql: "UPDATE devices_seen SET pending = ? WHERE client_id = ?")
        let publish = try db.cachedStatement(sql: "UPDATE devices_seen SET online = ?, published_at = ?, pending = 0 WHERE client_id = ?")
        for id in candidates.sorted() {
            guard let row = try Row.fetchOne(read, arguments: [id]) else { continue }
            let live = try Bool.fetchOne(isLive, arguments: [id, row["owner"] as String, now]) ?? false
            let published: Bool = row["online"]
            if live == published {
                if row["pending"] as Bool { try setPending.execute(arguments: [false, id]) }
                continue
            }
            let publishedAt: Int64 = row["published_at"]
            guard publishedAt + PresenceTick.coalescingMilliseconds <= now else {
                try setPending.execute(arguments: [true, id])
                waiting = true
                continue
            }
            let owner = UserID(stored: row["owner"])
            let clientID = ClientID(stored: id)
            let presence = Presence(clientID: clientID, online: live, lastSeenAt: Timestamp.date(milliseconds: row["last_seen_at"]))
            try ChangeLog.append(
                db, entity: .presence, op: .upsert, id: id, owner: owner, value: presence, origin: Origin(user: owner, clientID: clientID), at: now,
                observer: observer)
            try publish.execute(arguments: [live, now, id])
        }
        return waiting
    }

    /// `PresenceTick.admitted` with what the database knows: which of the sighted devices it has
    /// seen or written, and, only when some are new, how many devices each of their users was seen with.
    private func admitted(_ db: Database, _ sightings: [PresenceTick.Holder: Date]) throws -> [PresenceTick.Holder: Date] {
        guard !sightings.isEmpty else { return sightings }
        let ids = String(decoding: try JSONEncoder().encode(Set(sightings.keys.map(\.clientID.rawValue)).sorted()), as: UTF8.self)
        let known = Set(
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT client_id FROM devices_seen WHERE client_id IN (SELECT value FROM json_each(?1))
                        UNION ALL SELECT client_id FROM clients WHERE client_id IN (SELECT value FROM json_each(?1))
                        """), arguments: [ids]
            ).map { ClientID(stored: $0) })
        let newUsers = Set(sightings.keys.filter { !known.contains($0.clientID) }.map(\.user))
        guard !newUsers.isEmpty else { return sightings }
        let count = try db.cachedStatement(sql: "SELECT count(*) FROM devices_seen WHERE owner = ?")
        var seenCount: [UserID: Int] = [:]
        for user in newUsers { seenCount[user] = try Int.fetchOne(count, arguments: [user.rawValue]) ?? 0 }
        return PresenceTick.admitted(sightings, known: known, seenCount: seenCount, limit: limits.clientsPerUser)
    }

    public func presence(of clientIDs: [ClientID], user: UserID, now: Date) async throws -> [ClientID: Presence] {
        guard !clientIDs.isEmpty else { return [:] }
        let now = Timestamp.milliseconds(now)
        let ids = String(decoding: try JSONEncoder().encode(clientIDs.map(\.rawValue)), as: UTF8.self)
        return try await read { db in
            // One statement for every device asked about, as on PostgreSQL; a device never seen has no row.
            var presence = Dictionary(clientIDs.map { ($0, Presence(clientID: $0, online: false, lastSeenAt: nil)) }, uniquingKeysWith: { first, _ in first })
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT d.client_id, d.last_seen_at,
                           EXISTS (SELECT 1 FROM presence_leases l
                                   WHERE l.client_id = d.client_id AND l.owner = d.owner AND l.expires_at > ?) AS live
                    FROM devices_seen d WHERE d.client_id IN (SELECT value FROM json_each(?)) AND d.owner = ?
                    """, arguments: [now, ids, user.rawValue])
            while let row = try rows.next() {
                let clientID = ClientID(stored: row["client_id"])
                let lastSeen: Int64 = row["last_seen_at"]
                presence[clientID] = Presence(clientID: clientID, online: row["live"], lastSeenAt: Timestamp.date(milliseconds: lastSeen))
            }
            return presence
        }
    }

    public func removeStaleDevices(notSeenSince cutoff: Date, limit: Int) async throws -> Int {
        let cutoff = Timestamp.milliseconds(cutoff)
        let now = Timestamp.milliseconds(Date())
        return try await write { [observer] db in
            // Neither written nor seen since the cutoff, and no feed of its owner's open on it anywhere
            // (another user's lease, from before it was written, keeps nothing); the oldest first,
            // found through `clients_updated` (in client_id order SQLite would walk every device).
            let stale = try Row.fetchAll(
                db,
                sql: """
                    SELECT c.client_id, c.owner FROM clients c LEFT JOIN devices_seen d ON d.client_id = c.client_id
                    WHERE c.updated_at < ? AND (d.last_seen_at IS NULL OR d.last_seen_at < ?)
                      AND NOT EXISTS (
                          SELECT 1 FROM presence_leases l WHERE l.client_id = c.client_id AND l.owner = c.owner AND l.expires_at > ?)
                    ORDER BY c.updated_at, c.client_id LIMIT ?
                    """, arguments: [cutoff, cutoff, now, limit])
            let deleteClient = try db.cachedStatement(sql: "DELETE FROM clients WHERE client_id = ?")
            let deleteSeen = try db.cachedStatement(sql: "DELETE FROM devices_seen WHERE client_id = ?")
            for row in stale {
                let id: String = row["client_id"]
                let owner = UserID(stored: row["owner"])
                try deleteClient.execute(arguments: [id])
                try deleteSeen.execute(arguments: [id])
                try ChangeLog.append(
                    db, entity: .navigation, op: .delete, id: id, owner: owner, value: Navigation?.none,
                    origin: Origin(user: owner, clientID: ClientID(stored: id)), at: now, observer: observer)
            }
            // Devices seen but never written go without a change: there is no navigation to delete.
            try db.execute(
                sql: """
                    DELETE FROM devices_seen WHERE last_seen_at < ?
                      AND client_id NOT IN (SELECT client_id FROM clients)
                      AND NOT EXISTS (
                          SELECT 1 FROM presence_leases l
                          WHERE l.client_id = devices_seen.client_id AND l.owner = devices_seen.owner AND l.expires_at > ?)
                    """, arguments: [cutoff, now])
            return stale.count
        }
    }
}
