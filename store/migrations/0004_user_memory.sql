-- User memory: what the user told the assistant to remember (or what it learned).
-- `user_memory` is the source of truth; `user_memory_vec` (see store/_vectors.py)
-- is a derived index. Deleting is soft: `deleted_at` is set and the vector row goes.

CREATE TABLE IF NOT EXISTS user_memory (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    type         TEXT NOT NULL CHECK (type IN ('preference', 'instruction', 'profile', 'note')),
    scope        TEXT NOT NULL CHECK (scope IN ('global', 'project')),
    project_id   TEXT,
    origin       TEXT NOT NULL DEFAULT 'manual' CHECK (origin IN ('manual', 'learned')),
    content      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deleted_at   TEXT,
    -- A project memory names its project; a global one names none.
    CHECK ((scope = 'project') = (project_id IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS user_memory_live ON user_memory(user_id, project_id) WHERE deleted_at IS NULL;

-- Bumped in the same transaction as every change to a user's memory, so a
-- conversation can pin the memory it started with and notice when it changed.
CREATE TABLE IF NOT EXISTS user_memory_versions (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    version INTEGER NOT NULL
);
