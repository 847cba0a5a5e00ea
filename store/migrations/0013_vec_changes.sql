-- The vector change feed (issue 23): one row per vector written or deleted, added by the
-- writing transaction. In-memory indexes (store/sqlite/_vecfeed.py) apply the rows after
-- their watermark instead of reloading a whole table. AUTOINCREMENT: a pruned seq is
-- never handed out again, so a watermark stays comparable.
CREATE TABLE vec_changes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    tbl     TEXT NOT NULL,             -- the vector table
    row_id  TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT ''   -- the user of a per-user table, else empty
);
CREATE INDEX vec_changes_user ON vec_changes(tbl, user_id, seq);
-- The per-table generations the feed replaces.
DELETE FROM meta WHERE key LIKE 'vecgen:%';
