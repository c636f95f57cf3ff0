-- Presence by owner.
--
-- A user's devices seen, by owner: a presence tick that sights a device the store does not know
-- counts its user's devices (`PresenceTick.admitted`, the `limits.clientsPerUser` cap), which
-- without this index read every row of `devices_seen`, every user's, once per such user and tick.
CREATE INDEX devices_seen_owner ON devices_seen (owner);

-- A lease is its holder's: one per device, daemon and user whose feed naming the device is open
-- there. A device is online only while its own user (`devices_seen.owner`) holds a lease; another
-- user's feed naming the same id, before or after the device was written, holds one of its own
-- that makes it online to no one, and neither takes nor gives up the owner's. Leases from before
-- are given their device's owner, as they were counted until now.
CREATE TABLE presence_leases_new (
    client_id  TEXT NOT NULL,
    daemon     TEXT NOT NULL,
    owner      TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (client_id, daemon, owner)
) STRICT, WITHOUT ROWID;

INSERT INTO presence_leases_new (client_id, daemon, owner, expires_at)
SELECT l.client_id, l.daemon, coalesce(d.owner, ''), l.expires_at
FROM presence_leases l LEFT JOIN devices_seen d ON d.client_id = l.client_id;

DROP TABLE presence_leases;
ALTER TABLE presence_leases_new RENAME TO presence_leases;
CREATE INDEX presence_leases_expiry ON presence_leases (expires_at);
