-- The log's entity check as three comparisons instead of an IN list. SQLite evaluates
-- `x IN (three or more constants)` through a temporary table it builds and fills for each
-- statement, so every entry appended paid for one (about half an insert's cost). The two checks
-- accept the same values, so every entry meets the new one.
--
-- SQLite cannot change a CHECK constraint in place, and making the table again copies the whole
-- log (as 0008 did). This edits the table's definition instead, SQLite's documented procedure for
-- a constraint every row already meets ("Making Other Kinds Of Table Schema Changes"):
-- `AppDatabase.migrator` turns `writable_schema` on before this statement, checks that it changed
-- the definition, then raises `schema_version` (so that every other connection reads the schema
-- again) and turns `writable_schema` off, in this migration's transaction.
UPDATE sqlite_schema
SET sql = replace(sql,
    'CHECK (entity IN (''item'', ''navigation'', ''presence''))',
    'CHECK (entity = ''item'' OR entity = ''navigation'' OR entity = ''presence'')')
WHERE type = 'table' AND name = 'changes';
