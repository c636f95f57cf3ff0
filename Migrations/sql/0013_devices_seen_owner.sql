-- A user's devices seen, by owner: a presence tick that sights a device the store does not know
-- counts its user's devices (`PresenceTick.admitted`, the `limits.clientsPerUser` cap), which
-- without this index read every row of `devices_seen`, every user's, once per such user and tick.
CREATE INDEX devices_seen_owner ON devices_seen (owner);
