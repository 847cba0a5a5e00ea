-- Fact sheets (see store/migrations/0003_fact_sheets.sql). `rowid` stands in for
-- SQLite's implicit rowid, which store/fact_sheets.py orders ties by.

CREATE TABLE fact_sheets (
    rowid       BIGSERIAL NOT NULL UNIQUE,
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    facts_json  TEXT NOT NULL,
    dedup_log   TEXT,
    fact_count  INTEGER NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX fact_sheets_user ON fact_sheets(user_id, created_at DESC);
