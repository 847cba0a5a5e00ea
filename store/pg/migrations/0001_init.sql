-- PostgreSQL twin of store/migrations/0001_init.sql: same tables, columns and
-- meanings (times are ISO-8601 text, flags are integers), so the domain stores'
-- SQL runs unchanged on both. Later files follow SQLite's numbering.

CREATE EXTENSION IF NOT EXISTS vector;

-- SQLite's ifnull(), used by the stores (and by knowledge's expression indexes).
CREATE OR REPLACE FUNCTION ifnull(anyelement, anyelement) RETURNS anyelement
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT coalesce($1, $2)';

CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    is_admin    INTEGER NOT NULL DEFAULT 0,
    token_id    TEXT NOT NULL UNIQUE,
    token_hash  TEXT NOT NULL,
    timezone    TEXT NOT NULL DEFAULT 'UTC',
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title       TEXT NOT NULL DEFAULT '',
    project_id  TEXT,
    snapshot    TEXT,
    snapshot_at TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX conversations_user ON conversations(user_id, updated_at DESC, id);

CREATE TABLE messages (
    seq             BIGSERIAL PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'complete'
                    CHECK (status IN ('pending', 'complete', 'interrupted', 'error')),
    mode            TEXT,
    prefix_hash     TEXT,
    usage           TEXT,
    cached_tokens   INTEGER,
    extracted_at    TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX messages_conversation ON messages(conversation_id, seq);
CREATE INDEX messages_unextracted ON messages(user_id, seq) WHERE extracted_at IS NULL;

CREATE TABLE facts (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    category      TEXT NOT NULL CHECK (category IN ('core', 'technical', 'project', 'transient')),
    fact          TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    superseded_by TEXT REFERENCES facts(id) ON DELETE SET NULL,
    valid_to      TEXT
);
CREATE INDEX facts_user ON facts(user_id, valid_to, updated_at DESC, id);

CREATE TABLE fact_extractions (
    id           BIGSERIAL PRIMARY KEY,
    fact_id      TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    message_id   TEXT,
    extracted_at TEXT NOT NULL
);
CREATE INDEX fact_extractions_user ON fact_extractions(user_id, extracted_at DESC);
CREATE INDEX fact_extractions_fact ON fact_extractions(fact_id, extracted_at DESC);
