-- Change-value form 2 (the navigation issue), as SQLite's 0007: the retained navigation values
-- are rewritten by `NavigationValueUpgrade`, which the migrator runs right after this file in the
-- same transaction; this file raises the form's version.
UPDATE meta SET value = '2' WHERE key = 'change_value_format';
