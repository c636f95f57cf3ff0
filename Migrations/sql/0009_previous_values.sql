-- Filtered feeds (the filtered-feeds issue): an item change's entry keeps the item as it was
-- before it, so that a feed following part of the inventory can tell an item that leaves its
-- filter from one it never showed. NULL: no item before (a create; navigation and presence
-- entries). Entries written before this column existed hold '?' (the default, which SQLite keeps
-- in the schema, so adding the column rewrites nothing): not recorded. Every insert names the column.
ALTER TABLE changes ADD COLUMN previous TEXT DEFAULT '?';
