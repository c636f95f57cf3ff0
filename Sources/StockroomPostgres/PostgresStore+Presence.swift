import Foundation
import PostgresNIO
import StockroomCore
import StockroomStorage

extension PostgresStore {
    @discardableResult
    public func recordPresence(_ tick: PresenceTick) async throws -> Bool {
        let limit = limits.clientsPerUser
        return try await write { write in
            let now = Timestamp.milliseconds(tick.now)
            let until = Timestamp.milliseconds(tick.leaseUntil)
            var sightings = tick.sightings
            if !sightings.isEmpty {
                // `PresenceTick.admitted`, as on SQLite: devices new to the database only up to each
                // user's `clientsPerUser` devices seen.
                let ids = Set(sightings.keys.map(\.clientID.rawValue)).sorted()
                var known = Set<ClientID>()
                for row in try await write.query(
                    "SELECT client_id FROM devices_seen WHERE client_id = ANY(\(ids)::text[]) UNION ALL SELECT client_id FROM clients WHERE client_id = ANY(\(ids)::text[])")
                {
                    known.insert(ClientID(stored: try row.decode(String.self)))
                }
                let newUsers = Set(sightings.keys.filter { !known.contains($0.clientID) }.map(\.user.rawValue)).sorted()
                if !newUsers.isEmpty {
                    // Each such user's room is counted under a lock of its own (in user order, as
                    // every daemon takes them), held to the commit: another daemon's tick counts
                    // after this one's devices are in, so two ticks at once do not each fill it.
                    for user in newUsers { try await write.lock("presence-room:" + user) }
                    var seenCount: [UserID: Int] = [:]
                    for row in try await write.query(
                        "SELECT owner, count(*)::bigint FROM devices_seen WHERE owner = ANY(\(newUsers)::text[]) GROUP BY owner")
                    {
                        let (owner, count) = try row.decode((String, Int64).self)
                        seenCount[UserID(stored: owner)] = Int(count)
                    }
                    sightings = PresenceTick.admitted(sightings, known: known, seenCount: seenCount, limit: limit)
                }
            }
            // Each step is one statement for all the tick's devices, in client_id order (the order
            // every daemon locks them in). A device belongs to the user who wrote it; one never
            // written, to the user first seen with it. Another user's sighting or lease takes
            // nothing over, except that the writer's own sighting takes back a device someone else
            // was seen with before it was written, its presence then published afresh to the
            // writer (as SQLite). A lease is its holder's, and only the owner's make the device online.
            // A statement may not upsert one row twice: a device seen by several users this tick
            // takes one statement per user, the first in user order first.
            var rounds: [[(key: PresenceTick.Holder, value: Date)]] = []
            var previous: ClientID?
            var round = 0
            for sighting in sightings.sorted(by: { $0.key < $1.key }) {
                round = sighting.key.clientID == previous ? round + 1 : 0
                previous = sighting.key.clientID
                if rounds.count == round { rounds.append([]) }
                rounds[round].append(sighting)
            }
            for seen in rounds {
                let (ids, owners, ats) = (seen.map(\.key.clientID.rawValue), seen.map(\.key.user.rawValue), seen.map { Timestamp.milliseconds($0.value) })
                try await write.query(
                    """
                    INSERT INTO devices_seen (client_id, owner, last_seen_at)
                    SELECT s.id, s.owner, s.at FROM unnest(\(ids)::text[], \(owners)::text[], \(ats)::bigint[]) AS s(id, owner, at)
                    WHERE NOT EXISTS (SELECT 1 FROM clients c WHERE c.client_id = s.id AND c.owner <> s.owner) ORDER BY 1
                    ON CONFLICT (client_id) DO UPDATE SET
                        last_seen_at = CASE WHEN devices_seen.owner = excluded.owner
                            THEN greatest(devices_seen.last_seen_at, excluded.last_seen_at) ELSE excluded.last_seen_at END,
                        online = devices_seen.online AND devices_seen.owner = excluded.owner,
                        published_at = CASE WHEN devices_seen.owner = excluded.owner THEN devices_seen.published_at ELSE 0 END,
                        pending = devices_seen.pending OR devices_seen.owner <> excluded.owner,
                        owner = excluded.owner
                    WHERE devices_seen.owner = excluded.owner
                       OR EXISTS (SELECT 1 FROM clients c WHERE c.client_id = excluded.client_id AND c.owner = excluded.owner)
                    """)
            }
            if !tick.opened.isEmpty {
                let opened = tick.opened.sorted()
                let (ids, users) = (opened.map(\.clientID.rawValue), opened.map(\.user.rawValue))
                try await write.query(
                    """
                    INSERT INTO presence_leases (client_id, daemon, expires_at, owner)
                    SELECT o.id, \(tick.daemon), \(until), o.owner FROM unnest(\(ids)::text[], \(users)::text[]) AS o(id, owner)
                    WHERE NOT EXISTS (SELECT 1 FROM clients c WHERE c.client_id = o.id AND c.owner <> o.owner) ORDER BY o.id, o.owner
                    ON CONFLICT (client_id, daemon, owner) DO UPDATE SET expires_at = excluded.expires_at
                    """)
            }
            if !tick.closed.isEmpty {
                let closed = tick.closed.sorted()
                let (ids, users) = (closed.map(\.clientID.rawValue), closed.map(\.user.rawValue))
                // `client_id = ANY` repeats what the pairs say, for the planner: a join on the pairs
                // alone (`USING unnest(…)`) was planned as a scan of the whole primary key index,
                // which PostgresStatementPlanTests refuses.
                try await write.query(
                    """
                    DELETE FROM presence_leases
                    WHERE daemon = \(tick.daemon) AND client_id = ANY(\(ids)::text[])
                      AND (client_id, owner) IN (SELECT * FROM unnest(\(ids)::text[], \(users)::text[]))
                    """)
            }
            if tick.renewLeases {
                try await write.query("UPDATE presence_leases SET expires_at = \(until) WHERE daemon = \(tick.daemon)")
            }
            var candidates = Set(tick.opened.map(\.clientID.rawValue)).union(tick.closed.map(\.clientID.rawValue))
            for row in try await write.query("DELETE FROM presence_leases WHERE expires_at <= \(now) RETURNING client_id") {
                candidates.insert(try row.decode(String.self))
            }
            for row in try await write.query("SELECT client_id FROM devices_seen WHERE pending") {
                candidates.insert(try row.decode(String.self))
            }
            guard !candidates.isEmpty else { return false }
            var waiting = false
            // Every candidate's row locked, in client_id order: two daemons deciding one device take turns.
            let rows = try await write.query(
                """
                SELECT client_id, owner, last_seen_at, online, published_at, pending,
                       EXISTS (SELECT 1 FROM presence_leases l
                               WHERE l.client_id = d.client_id AND l.owner = d.owner AND l.expires_at > \(now))
                FROM devices_seen d WHERE client_id = ANY(\(candidates.sorted())::text[]) ORDER BY client_id FOR UPDATE
                """)
            var updates: (ids: [String], online: [Bool], publishedAt: [Int64], pending: [Bool]) = ([], [], [], [])
            for row in rows {
                let (id, owner, lastSeen, published, publishedAt, pending, live) = try row.decode(
                    (String, String, Int64, Bool, Int64, Bool, Bool).self)
                let next: (online: Bool, publishedAt: Int64, pending: Bool)
                if live == published {
                    guard pending else { continue }
                    next = (published, publishedAt, false)
                } else if publishedAt + PresenceTick.coalescingMilliseconds > now {
                    next = (published, publishedAt, true)
                    waiting = true
                } else {
                    let user = UserID(stored: owner)
                    let clientID = ClientID(stored: id)
                    write.record(
                        entity: .presence, op: .upsert, id: id, owner: user,
                        value: Presence(clientID: clientID, online: live, lastSeenAt: Timestamp.date(milliseconds: lastSeen)),
                        origin: Origin(user: user, clientID: clientID), at: now)
                    next = (live, now, false)
                }
                updates.ids.append(id)
                updates.online.append(next.online)
                updates.publishedAt.append(next.publishedAt)
                updates.pending.append(next.pending)
            }
            if !updates.ids.isEmpty {
                try await write.query(
                    """
                    UPDATE devices_seen d SET online = u.online, published_at = u.published_at, pending = u.pending
                    FROM unnest(\(updates.ids)::text[], \(updates.online)::boolean[], \(updates.publishedAt)::bigint[], \(updates.pending)::boolean[])
                        AS u(client_id, online, published_at, pending)
                    WHERE d.client_id = u.client_id
                    """)
            }
            return waiting
        }
    }

    public func presence(of clientIDs: [ClientID], user: UserID, now: Date) async throws -> [ClientID: Presence] {
        guard !clientIDs.isEmpty else { return [:] }
        let now = Timestamp.milliseconds(now)
        let ids = clientIDs.map(\.rawValue)
        return try await read { connection in
            var presence = Dictionary(clientIDs.map { ($0, Presence(clientID: $0, online: false, lastSeenAt: nil)) }, uniquingKeysWith: { first, _ in first })
            let rows = try await connection.query(
                """
                SELECT client_id, last_seen_at,
                       EXISTS (SELECT 1 FROM presence_leases l
                               WHERE l.client_id = d.client_id AND l.owner = d.owner AND l.expires_at > \(now))
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
            // Neither written nor seen since the cutoff, and no feed of its owner's open on it
            // anywhere, the oldest first (as on SQLite); locked, so that a command of the device
            // waits and then finds it gone (and starts afresh).
            let stale = try await write.query(
                """
                SELECT c.client_id, c.owner FROM clients c LEFT JOIN devices_seen d ON d.client_id = c.client_id
                WHERE c.updated_at < \(cutoff) AND (d.last_seen_at IS NULL OR d.last_seen_at < \(cutoff))
                  AND NOT EXISTS (SELECT 1 FROM presence_leases l WHERE l.client_id = c.client_id AND l.owner = c.owner AND l.expires_at > \(now))
                ORDER BY c.updated_at, c.client_id LIMIT \(Int64(limit))
                FOR UPDATE OF c SKIP LOCKED
                """
            ).map { try $0.decode((String, String).self) }
            for (id, owner) in stale {
                try await write.query("DELETE FROM clients WHERE client_id = \(id)")
                write.clientsAhead[ClientID(stored: id)] = nil
                try await write.query("DELETE FROM devices_seen WHERE client_id = \(id)")
                let user = UserID(stored: owner)
                write.record(
                    entity: .navigation, op: .delete, id: id, owner: user, value: Navigation?.none,
                    origin: Origin(user: user, clientID: ClientID(stored: id)), at: now)
            }
            // Devices seen but never written go without a change: there is no navigation to delete.
            try await write.query(
                """
                DELETE FROM devices_seen d WHERE d.last_seen_at < \(cutoff)
                  AND NOT EXISTS (SELECT 1 FROM clients c WHERE c.client_id = d.client_id)
                  AND NOT EXISTS (SELECT 1 FROM presence_leases l WHERE l.client_id = d.client_id AND l.owner = d.owner AND l.expires_at > \(now))
                """)
            return stale.count
        }
    }
}
