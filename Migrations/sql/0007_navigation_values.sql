-- Change-value form 2 (the navigation issue): a Navigation's JSON carries `checkpoints` and its
-- canonical `url`, and a delete alert carries its alert (title, message, buttons). The retained
-- navigation values are rewritten into that form by `NavigationValueUpgrade`, which the store
-- runs right after this file in the same transaction (AppDatabase.migrator); this file raises
-- the form's version.
UPDATE meta SET value = '2' WHERE key = 'change_value_format';
