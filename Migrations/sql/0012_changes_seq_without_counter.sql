-- The log's seq without AUTOINCREMENT. AUTOINCREMENT keeps its counter in `sqlite_sequence`, a
-- row SQLite reads and rewrites in every transaction that appends: a page more in each commit (of
-- a PUT's three or four) and about a tenth of an append's instructions. `ChangeLog.append` now
-- numbers an entry itself, one past the head, and the head is the newest retained entry or, when
-- every entry is trimmed, `meta.trimmed_through`: a seq is still never given twice.
--
-- The counter carried over: the store trims only from the oldest end and records how far, so the
-- counter is at most the newest entry or `trimmed_through`. A file whose counter is above both
-- (its newest entries deleted by hand) gets its log trimmed through the counter, the store's own
-- trim: a client that read past the entries left resyncs rather than meeting their seqs again.
UPDATE meta
SET value = CAST((SELECT seq FROM sqlite_sequence WHERE name = 'changes') AS TEXT)
WHERE key = 'trimmed_through'
  AND (SELECT seq FROM sqlite_sequence WHERE name = 'changes') > coalesce((SELECT max(seq) FROM changes), 0)
  AND (SELECT seq FROM sqlite_sequence WHERE name = 'changes') > CAST(value AS INTEGER);
DELETE FROM changes WHERE seq <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'trimmed_through');
DELETE FROM sqlite_sequence WHERE name = 'changes';
-- AUTOINCREMENT changes nothing in the table's own pages, so SQLite's documented edit of a
-- definition in place applies, as in 0011 (`AppDatabase.migrator` allows and checks it).
UPDATE sqlite_schema
SET sql = replace(sql, 'INTEGER PRIMARY KEY AUTOINCREMENT,', 'INTEGER PRIMARY KEY,')
WHERE type = 'table' AND name = 'changes';
