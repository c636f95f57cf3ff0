-- Two things the storage seam (issue #31) asks of the stored forms.
--
-- 1. A decided request's answer is kept as one opaque value the server writes and reads back
--    (`StoredResponse.bytes`): the store holds no HTTP status or headers. The server's form is
--    `<status>\n<headers as a JSON object>\n<body>` (`Reply.stored` in StockroomServer); the rows
--    kept so far are rewritten into it.
CREATE TABLE idempotency_records_new (
    user        TEXT NOT NULL,
    scope       TEXT NOT NULL,                     -- 'items' or 'client:<clientID>'
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,                     -- method, path and canonical body of the first request
    response    BLOB NOT NULL,                     -- opaque to the store: what the server stored
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (user, scope, key)
) STRICT, WITHOUT ROWID;

INSERT INTO idempotency_records_new (user, scope, key, fingerprint, response, created_at)
SELECT user, scope, key, fingerprint,
       CAST(CAST(status AS TEXT) || char(10) || headers || char(10) || body AS BLOB),
       created_at
FROM idempotency_records;

DROP TABLE idempotency_records;
ALTER TABLE idempotency_records_new RENAME TO idempotency_records;
CREATE INDEX idempotency_records_created ON idempotency_records (created_at);

-- 2. The change log keeps each change's value as the API's JSON of the entity (an Item, a
--    Navigation), spliced into feed answers as it is. This names that form's version: a change of
--    the contract that changes an entity's JSON comes with a migration that rewrites the stored
--    values and raises it, and a store refuses a file whose form is newer than the one it writes
--    (ARCHITECTURE.md, "The change log's stored form").
INSERT INTO meta (key, value) VALUES ('change_value_format', '1');
