-- Presence (the navigation issue), as SQLite's 0008: the log takes presence entries, each
-- device's presence, and each daemon's leases on the devices whose feed is open on it.
ALTER TABLE changes DROP CONSTRAINT changes_entity_check;
ALTER TABLE changes ADD CONSTRAINT changes_entity_check CHECK (entity IN ('item', 'navigation', 'presence'));

CREATE TABLE devices_seen (
    client_id    TEXT COLLATE "C" PRIMARY KEY,
    owner        TEXT NOT NULL,                 -- the user who was first seen with it
    last_seen_at BIGINT NOT NULL,               -- its last command or feed request (ms)
    online       BOOLEAN NOT NULL DEFAULT false, -- as last published
    published_at BIGINT NOT NULL DEFAULT 0,     -- when its last presence entry was appended (ms)
    pending      BOOLEAN NOT NULL DEFAULT false  -- its leases say otherwise, not yet published (coalescing)
);

CREATE INDEX devices_seen_pending ON devices_seen (client_id) WHERE pending;
CREATE INDEX devices_seen_last_seen ON devices_seen (last_seen_at);

CREATE TABLE presence_leases (
    client_id  TEXT COLLATE "C" NOT NULL,
    daemon     TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, daemon)
);

CREATE INDEX presence_leases_expiry ON presence_leases (expires_at);

CREATE INDEX clients_updated ON clients (updated_at);
