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
-- are given their device's owner, as they were counted until now. (A daemon of the version
-- before cannot record presence once this has run: upgrade every daemon, as operations.md says.)
ALTER TABLE presence_leases ADD COLUMN owner TEXT NOT NULL DEFAULT '';
UPDATE presence_leases l SET owner = d.owner FROM devices_seen d WHERE d.client_id = l.client_id;
ALTER TABLE presence_leases ALTER COLUMN owner DROP DEFAULT;
ALTER TABLE presence_leases DROP CONSTRAINT presence_leases_pkey, ADD PRIMARY KEY (client_id, daemon, owner);
