-- Navigation state per device (client), its owner, and idempotency records.

CREATE TABLE clients (
    client_id        TEXT PRIMARY KEY NOT NULL,
    owner            TEXT NOT NULL,                -- the user who first wrote it; for anyone else it does not exist
    state            TEXT NOT NULL,                -- JSON {"tab", "path", "destination"}
    version          INTEGER NOT NULL CHECK (version >= 1),
    updated_at       INTEGER NOT NULL,
    owner_change_seq INTEGER NOT NULL              -- change-log seq of the owner's own latest change (not a repair by someone else)
) STRICT;

CREATE INDEX clients_by_owner ON clients (owner, owner_change_seq DESC);

-- Which clients point at which item, so a delete repairs exactly those.
CREATE TABLE client_item_refs (
    item_id   TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    PRIMARY KEY (item_id, client_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE idempotency_records (
    user        TEXT NOT NULL,
    scope       TEXT NOT NULL,                     -- 'items' or 'client:<clientID>'
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,                     -- method, path and canonical body of the first request
    status      INTEGER NOT NULL,
    headers     TEXT NOT NULL,                     -- JSON object
    body        BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (user, scope, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX idempotency_records_created ON idempotency_records (created_at);
