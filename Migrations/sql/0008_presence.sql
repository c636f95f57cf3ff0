-- Presence (the navigation issue): when each device was last seen, whether a feed request or
-- stream of it is open on any daemon, and `presence` entries in the change log.

-- 1. The log takes presence entries: SQLite cannot change a CHECK constraint in place, so the
--    table is made again with the rows as they are. AUTOINCREMENT's counter is carried over (a
--    trimmed log's head is not its max(seq)); the rename moves it to the new name.
CREATE TABLE changes_new (
    seq                    INTEGER PRIMARY KEY AUTOINCREMENT,  -- commit order, never reused, no gaps
    entity                 TEXT NOT NULL CHECK (entity IN ('item', 'navigation', 'presence')),
    op                     TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
    entity_id              TEXT NOT NULL,
    owner                  TEXT,                                -- the user a navigation or presence change is visible to; NULL for items
    value                  TEXT,                                -- JSON of the Item, Navigation or Presence; NULL for a delete
    origin_client_id       TEXT,
    origin_idempotency_key TEXT,
    at                     INTEGER NOT NULL
) STRICT;

INSERT INTO changes_new (seq, entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at)
SELECT seq, entity, op, entity_id, owner, value, origin_client_id, origin_idempotency_key, at FROM changes;

DELETE FROM sqlite_sequence WHERE name = 'changes_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'changes_new', seq FROM sqlite_sequence WHERE name = 'changes';
DROP TABLE changes;
ALTER TABLE changes_new RENAME TO changes;

-- 2. Each device's presence, whether or not it has written its navigation.
CREATE TABLE devices_seen (
    client_id    TEXT PRIMARY KEY NOT NULL,
    owner        TEXT NOT NULL,                                -- the user who was first seen with it
    last_seen_at INTEGER NOT NULL,                             -- its last command or feed request (ms)
    online       INTEGER NOT NULL DEFAULT 0 CHECK (online IN (0, 1)),  -- as last published
    published_at INTEGER NOT NULL DEFAULT 0,                   -- when its last presence entry was appended (ms)
    pending      INTEGER NOT NULL DEFAULT 0 CHECK (pending IN (0, 1))  -- its leases say otherwise, not yet published (coalescing)
) STRICT;

CREATE INDEX devices_seen_pending ON devices_seen (client_id) WHERE pending = 1;
CREATE INDEX devices_seen_last_seen ON devices_seen (last_seen_at);

-- 3. A daemon's lease on a device while a feed request or stream of it is open there; renewed
--    while open, left to expire by a daemon that dies.
CREATE TABLE presence_leases (
    client_id  TEXT NOT NULL,
    daemon     TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (client_id, daemon)
) STRICT, WITHOUT ROWID;

CREATE INDEX presence_leases_expiry ON presence_leases (expires_at);

-- 4. Devices unseen for `limits.deviceRetentionDays` are found by their last write.
CREATE INDEX clients_updated ON clients (updated_at);
