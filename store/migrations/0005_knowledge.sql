-- Knowledge base (entries -> chunks, full-text index) and blog posts.
-- owner_id NULL = a shared entry (CLI-indexed files, published posts).

CREATE TABLE knowledge_entries (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT REFERENCES users(id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    source_type  TEXT NOT NULL,
    source_id    TEXT,
    content      TEXT NOT NULL,              -- L2: the full text
    abstract     TEXT NOT NULL DEFAULT '',   -- L0: 2-3 sentences
    overview     TEXT NOT NULL DEFAULT '',   -- L1: key points
    tiers_by     TEXT NOT NULL DEFAULT 'extractive' CHECK (tiers_by IN ('extractive', 'llm')),
    metadata     TEXT NOT NULL DEFAULT '{}', -- JSON object
    content_hash TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX knowledge_entries_list ON knowledge_entries(owner_id, source_type, created_at DESC);
-- One entry per source (file path, post id) per owner: re-indexing replaces it.
CREATE UNIQUE INDEX knowledge_entries_source
    ON knowledge_entries(ifnull(owner_id, ''), source_type, source_id) WHERE source_id IS NOT NULL;
CREATE INDEX knowledge_entries_hash ON knowledge_entries(ifnull(owner_id, ''), content_hash);

CREATE TABLE knowledge_chunks (
    seq          INTEGER PRIMARY KEY,        -- rowid of the full-text row
    id           TEXT NOT NULL UNIQUE,
    entry_id     TEXT NOT NULL REFERENCES knowledge_entries(id) ON DELETE CASCADE,
    chunk_index  INTEGER NOT NULL,
    content      TEXT NOT NULL,
    language     TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX knowledge_chunks_entry ON knowledge_chunks(entry_id, chunk_index);

-- Contentless: rows hold the analysed text (CJK bigrams, see store/_fts.py), keyed by
-- knowledge_chunks.seq; the chunk text itself is read from knowledge_chunks.
CREATE VIRTUAL TABLE knowledge_fts USING fts5(
    body, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER knowledge_chunks_fts_delete AFTER DELETE ON knowledge_chunks BEGIN
    DELETE FROM knowledge_fts WHERE rowid = old.seq;
END;

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
