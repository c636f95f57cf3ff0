-- Presence by owner.
--
-- A user's devices seen, by owner: a presence tick that sights a device the store does not know
-- counts its user's devices (`PresenceTick.admitted`, the `limits.clientsPerUser` cap), which
-- without this index read every row of `devices_seen`, every user's, once per such user and tick.
CREATE INDEX devices_seen_owner ON devices_seen (owner);

-- A lease is its holder's: the user whose feed of the device is open. A device is online only
-- while its own user (`devices_seen.owner`) holds a lease; another user's feed naming the same
-- id, before or after the device was written, holds one that makes it online to no one. Leases
-- from before this column are given the device's owner, as they were counted until now. The
-- default stays: a daemon of the version before, still running beside a migrated one, takes
-- leases that count for no one rather than failing its presence tick.
ALTER TABLE presence_leases ADD COLUMN owner TEXT NOT NULL DEFAULT '';
UPDATE presence_leases l SET owner = d.owner FROM devices_seen d WHERE d.client_id = l.client_id;
