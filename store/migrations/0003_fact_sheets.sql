-- Scored fact sheets: a curated top-100 snapshot of a user's facts, regenerated after
-- each extraction cycle and read by the chat context. facts_json is canonical JSON
-- (sorted keys, fixed separators) so unchanged inputs give byte-identical sheets.

CREATE TABLE IF NOT EXISTS fact_sheets (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    facts_json  TEXT NOT NULL,
    -- JSON array of fact ids an (optional) AI dedup pass dropped; NULL when it did not run.
    dedup_log   TEXT,
    fact_count  INTEGER NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS fact_sheets_user ON fact_sheets(user_id, created_at DESC);
