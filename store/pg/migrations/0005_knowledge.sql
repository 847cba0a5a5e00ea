-- Knowledge base and posts (see store/migrations/0005_knowledge.sql). Full text:
-- `knowledge_fts` takes the same rows as SQLite's FTS5 table (the analysed text,
-- CJK runs as bigrams, see store/_fts.py, keyed by knowledge_chunks.seq) and keeps
-- a generated tsvector ('english': stemming like FTS5's porter) under a GIN index.

CREATE TABLE knowledge_entries (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT REFERENCES users(id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    source_type  TEXT NOT NULL,
    source_id    TEXT,
    content      TEXT NOT NULL,
    abstract     TEXT NOT NULL DEFAULT '',
    overview     TEXT NOT NULL DEFAULT '',
    tiers_by     TEXT NOT NULL DEFAULT 'extractive' CHECK (tiers_by IN ('extractive', 'llm')),
    metadata     TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX knowledge_entries_list ON knowledge_entries(owner_id, source_type, created_at DESC);
CREATE UNIQUE INDEX knowledge_entries_source
    ON knowledge_entries(ifnull(owner_id, ''), source_type, source_id) WHERE source_id IS NOT NULL;
CREATE INDEX knowledge_entries_hash ON knowledge_entries(ifnull(owner_id, ''), content_hash);

CREATE TABLE knowledge_chunks (
    seq          BIGSERIAL PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    entry_id     TEXT NOT NULL REFERENCES knowledge_entries(id) ON DELETE CASCADE,
    chunk_index  INTEGER NOT NULL,
    content      TEXT NOT NULL,
    language     TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX knowledge_chunks_entry ON knowledge_chunks(entry_id, chunk_index);

CREATE TABLE knowledge_fts (
    rowid BIGINT PRIMARY KEY REFERENCES knowledge_chunks(seq) ON DELETE CASCADE,
    body  TEXT NOT NULL,
    tsv   tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, body)) STORED
);
CREATE INDEX knowledge_fts_tsv ON knowledge_fts USING gin (tsv);

CREATE TABLE posts (
    id           TEXT PRIMARY KEY,
    author_id    TEXT REFERENCES users(id) ON DELETE SET NULL,
    title        TEXT NOT NULL,
    content      TEXT NOT NULL,
    excerpt      TEXT NOT NULL,
    published    INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    published_at TEXT
);
CREATE INDEX posts_published ON posts(published, published_at DESC, id);
CREATE INDEX posts_created ON posts(created_at DESC, id);
