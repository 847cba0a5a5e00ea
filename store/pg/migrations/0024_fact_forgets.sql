-- What the user asked to forget, without what it was (issue 41): one row per extraction
-- batch that deleted facts at the user's request, naming the message that asked (its
-- own words are the only record of the content) and how many facts went. The console
-- and GET /api/facts/forgotten show it; a deleted message leaves the count and the time.
CREATE TABLE fact_forgets (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    message_id   TEXT REFERENCES messages(id) ON DELETE SET NULL,
    facts        INTEGER NOT NULL,
    forgotten_at TEXT NOT NULL
);
CREATE INDEX fact_forgets_user ON fact_forgets(user_id, forgotten_at DESC, id);
