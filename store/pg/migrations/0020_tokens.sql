-- Tokens, many per user, and user kinds (see store/migrations/0020_tokens.sql): the
-- users' tokens move to `tokens` unchanged, so they keep working.
CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    secret_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX tokens_user ON tokens(user_id, created_at, id);
INSERT INTO tokens(id, user_id, secret_hash, created_at, revoked_at)
    SELECT token_id, id, token_hash, created_at, revoked_at FROM users;

ALTER TABLE users DROP COLUMN token_id;
ALTER TABLE users DROP COLUMN token_hash;
ALTER TABLE users DROP CONSTRAINT users_name_key;
ALTER TABLE users ADD COLUMN kind TEXT NOT NULL DEFAULT 'user'
    CHECK (kind IN ('user', 'service', 'issuer', 'end_user'));
ALTER TABLE users ADD COLUMN owner_id TEXT REFERENCES users(id);
ALTER TABLE users ADD COLUMN external_id TEXT;
ALTER TABLE users ADD CONSTRAINT users_end_user_owner
    CHECK ((kind = 'end_user') = (owner_id IS NOT NULL AND external_id IS NOT NULL));
CREATE UNIQUE INDEX users_name ON users(name) WHERE owner_id IS NULL;
CREATE UNIQUE INDEX users_external ON users(owner_id, external_id) WHERE owner_id IS NOT NULL;
