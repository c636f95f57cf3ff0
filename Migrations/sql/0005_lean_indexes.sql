-- Two indexes that no statement uses any more (issue #13), about 31 bytes per item created:
-- lists and snapshots read items in rowid (= creation) order, one seek then consecutive rows,
-- and the log is trimmed by age from its oldest end, in rowid order too.
DROP INDEX items_live;
DROP INDEX changes_at;
