-- The change feed's retention watermark: every entry with seq <= trimmed_through has been
-- trimmed, so a cursor older than it must resync from a snapshot (410).
INSERT INTO meta (key, value) VALUES ('trimmed_through', '0');
