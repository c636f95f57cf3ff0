-- Items, bearer tokens, and the durable change log every write appends to.
-- Times are integer milliseconds since 1970-01-01 UTC.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;

-- The database epoch: created with the database, named in every feed cursor, so a
-- cursor from a restored or replaced database is recognised and refused.
INSERT INTO meta (key, value) VALUES ('epoch', lower(hex(randomblob(16))));

CREATE TABLE items (
    seq              INTEGER PRIMARY KEY,          -- creation order; keyset pagination cursor
    id               TEXT NOT NULL UNIQUE,         -- lowercase UUID; never reused (rows are tombstoned, not removed)
    name             TEXT NOT NULL,
    search_name      TEXT NOT NULL,                -- name lowercased by the server, for case-insensitive search
    color_name       TEXT,
    color_red        REAL,
    color_green      REAL,
    color_blue       REAL,
    in_stock         INTEGER NOT NULL CHECK (in_stock IN (0, 1)),
    quantity         INTEGER,                      -- when in stock
    is_on_back_order INTEGER,                      -- when out of stock
    version          INTEGER NOT NULL CHECK (version >= 1),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    deleted_at       INTEGER                       -- tombstone
) STRICT;

CREATE INDEX items_live ON items (seq) WHERE deleted_at IS NULL;

CREATE TABLE tokens (
    id          TEXT PRIMARY KEY NOT NULL,
    user        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
    secret_hash BLOB NOT NULL UNIQUE,              -- SHA-256 of the secret; the secret itself is never stored
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
) STRICT;

CREATE TABLE changes (
    seq                    INTEGER PRIMARY KEY AUTOINCREMENT,  -- commit order, never reused, no gaps
    entity                 TEXT NOT NULL CHECK (entity IN ('item', 'navigation')),
    op                     TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
    entity_id              TEXT NOT NULL,
    owner                  TEXT,                                -- the user a navigation change is visible to; NULL for items
    value                  TEXT,                                -- JSON of the Item or Navigation; NULL for a delete
    origin_client_id       TEXT,
    origin_idempotency_key TEXT,
    at                     INTEGER NOT NULL
) STRICT;

CREATE INDEX changes_at ON changes (at);
