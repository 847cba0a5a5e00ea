-- Tokens: a user holds any number, each revoked on its own and at once (rotation, one
-- per device or front end). A token of a `service` account is a service key: it acts
-- for its front end's end users, named per request (chatsvc/_acting.py). The users'
-- own tokens move here unchanged ("<token_id>.<secret>", sha256 of the secret), so
-- every token issued before this migration keeps working.
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

-- users without its token columns, and with a kind: `user` (a person with tokens),
-- `service` (a front end's account, holding service keys), `issuer` (the account a
-- JWT issuer's users hang off) and `end_user` (a front end's or issuer's user: its
-- `owner_id` and the id the owner knows it by, `external_id`). Names are unique among
-- accounts, not among end users (a display name). SQLite cannot drop a UNIQUE column:
-- the table is rebuilt (foreign keys are off while a migration runs, and checked
-- before it commits: store/_migrations.py).
CREATE TABLE users_rebuilt (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    is_admin    INTEGER NOT NULL DEFAULT 0,
    kind        TEXT NOT NULL DEFAULT 'user'
                CHECK (kind IN ('user', 'service', 'issuer', 'end_user')),
    owner_id    TEXT REFERENCES users(id),
    external_id TEXT,
    timezone    TEXT NOT NULL DEFAULT 'UTC',
    created_at  TEXT NOT NULL,
    revoked_at  TEXT,
    CHECK ((kind = 'end_user') = (owner_id IS NOT NULL AND external_id IS NOT NULL))
);
INSERT INTO users_rebuilt(id, name, is_admin, timezone, created_at, revoked_at)
    SELECT id, name, is_admin, timezone, created_at, revoked_at FROM users;
DROP TABLE users;
ALTER TABLE users_rebuilt RENAME TO users;
CREATE UNIQUE INDEX users_name ON users(name) WHERE owner_id IS NULL;
CREATE UNIQUE INDEX users_external ON users(owner_id, external_id) WHERE owner_id IS NOT NULL;
