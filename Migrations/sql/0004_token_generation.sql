-- A counter that every revocation or removal of a token bumps, in the same transaction.
-- The server keeps verified tokens in memory; it compares this counter on each request, so a
-- token revoked by another process (`stockroom token revoke`) is refused on the next request.
INSERT INTO meta (key, value) VALUES ('token_generation', '0');

CREATE TRIGGER tokens_revoked AFTER UPDATE OF revoked_at ON tokens
BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'token_generation';
END;

CREATE TRIGGER tokens_removed AFTER DELETE ON tokens
BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'token_generation';
END;
