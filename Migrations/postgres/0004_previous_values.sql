-- Filtered feeds (the filtered-feeds issue): an item change's entry keeps the item as it was
-- before it, so that a feed following part of the inventory can tell an item that leaves its
-- filter from one it never showed. NULL: no item before (a create; navigation and presence
-- entries). Entries written before this column existed read '?': not recorded. The default is
-- dropped at once: existing rows keep it (PostgreSQL stores it once, rewriting no row), new rows
-- name the column.
ALTER TABLE changes ADD COLUMN previous TEXT DEFAULT '?';
ALTER TABLE changes ALTER COLUMN previous DROP DEFAULT;
