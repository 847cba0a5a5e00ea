-- User memory (see store/migrations/0004_user_memory.sql).

CREATE TABLE user_memory (
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
    CHECK ((scope = 'project') = (project_id IS NOT NULL))
);
CREATE INDEX user_memory_live ON user_memory(user_id, project_id) WHERE deleted_at IS NULL;

CREATE TABLE user_memory_versions (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    version INTEGER NOT NULL
);
