-- Stockroom's schema on PostgreSQL: the SQLite schema of Migrations/sql/0001-0006 as it stands
-- after them, in one file (PostgreSQL databases never replay SQLite's history). The constraints
-- are SQLite's. Keys compare byte for byte (COLLATE "C"), as SQLite's BINARY does, whatever the
-- database's locale. JSON is TEXT: the log's values are spliced byte for byte into every Change
-- (ARCHITECTURE.md, "The change log's stored form"), which JSONB would reformat.
-- The migrator runs each statement on its own (postgres-nio sends one statement per query), all
-- in one transaction under an advisory lock.

CREATE TABLE meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);

INSERT INTO meta (key, value) VALUES
    ('epoch', replace(gen_random_uuid()::text, '-', '')),
    ('trimmed_through', '0'),
    ('token_generation', '0'),
    ('change_value_format', '1'),
    ('ready_probe', '0');

-- The change log's head: the last seq taken. Each write takes its numbers from this row as the
-- last step of its transaction, so seqs are contiguous and in commit order (a rollback gives them
-- back). Trimming never touches it.
CREATE TABLE log_head (
    id  SMALLINT PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL CHECK (seq >= 0)
);

INSERT INTO log_head (id, seq) VALUES (1, 0);

CREATE TABLE items (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- creation order; keyset pagination cursor
    id               TEXT COLLATE "C" NOT NULL,     -- lowercase UUID; never reused (rows are tombstoned, not removed)
    name             TEXT NOT NULL,
    search_name      TEXT NOT NULL,                 -- name lowercased by the server, for case-insensitive search
    color_name       TEXT,
    color_red        DOUBLE PRECISION,
    color_green      DOUBLE PRECISION,
    color_blue       DOUBLE PRECISION,
    in_stock         BOOLEAN NOT NULL,
    quantity         BIGINT,                        -- when in stock
    is_on_back_order BOOLEAN,                       -- when out of stock
    version          BIGINT NOT NULL CHECK (version >= 1),
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    deleted_at       BIGINT,                        -- tombstone
    CONSTRAINT items_id_key UNIQUE (id)
);

CREATE TABLE tokens (
    id          TEXT COLLATE "C" PRIMARY KEY,
    user_id     TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
    secret_hash BYTEA NOT NULL UNIQUE,              -- SHA-256 of the secret; the secret itself is never stored
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

CREATE TABLE changes (
    seq                    BIGINT PRIMARY KEY,      -- from log_head: commit order, never reused, no gaps
    entity                 TEXT NOT NULL CHECK (entity IN ('item', 'navigation')),
    op                     TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
    entity_id              TEXT NOT NULL,
    owner                  TEXT,                    -- the user a navigation change is visible to; NULL for items
    value                  TEXT,                    -- JSON of the Item or Navigation; NULL for a delete
    origin_client_id       TEXT,
    origin_idempotency_key TEXT,
    at                     BIGINT NOT NULL
);

CREATE TABLE clients (
    client_id        TEXT COLLATE "C" PRIMARY KEY,
    owner            TEXT NOT NULL,                 -- the user who first wrote it; for anyone else it does not exist
    state            TEXT NOT NULL,                 -- JSON {"tab", "path", "destination"}
    version          BIGINT NOT NULL CHECK (version >= 1),
    updated_at       BIGINT NOT NULL,
    owner_change_seq BIGINT NOT NULL                -- change-log seq of the owner's own latest change
);

CREATE INDEX clients_by_owner ON clients (owner, owner_change_seq DESC);

CREATE TABLE client_item_refs (
    item_id   TEXT COLLATE "C" NOT NULL,
    client_id TEXT COLLATE "C" NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    PRIMARY KEY (item_id, client_id)
);

CREATE INDEX client_item_refs_client ON client_item_refs (client_id);

CREATE TABLE idempotency_records (
    user_id     TEXT COLLATE "C" NOT NULL,
    scope       TEXT COLLATE "C" NOT NULL,          -- 'items' or 'client:<clientID>'
    key         TEXT COLLATE "C" NOT NULL,
    fingerprint TEXT NOT NULL,                      -- method, path and canonical body of the first request
    response    BYTEA NOT NULL,                     -- opaque to the store: what the server stored
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, scope, key)
);

CREATE INDEX idempotency_records_created ON idempotency_records (created_at);

-- Every revocation or removal of a token moves the token generation, and tells every daemon
-- (delivered at commit) so that their streams re-check their tokens.
CREATE FUNCTION stockroom_bump_token_generation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    generation BIGINT;
BEGIN
    UPDATE meta SET value = (value::BIGINT + 1)::TEXT WHERE key = 'token_generation'
        RETURNING value::BIGINT INTO generation;
    PERFORM pg_notify('stockroom', 't ' || generation);
    RETURN NULL;
END
$$;

CREATE TRIGGER tokens_revoked AFTER UPDATE OF revoked_at ON tokens
    FOR EACH ROW EXECUTE FUNCTION stockroom_bump_token_generation();

CREATE TRIGGER tokens_removed AFTER DELETE ON tokens
    FOR EACH ROW EXECUTE FUNCTION stockroom_bump_token_generation();
