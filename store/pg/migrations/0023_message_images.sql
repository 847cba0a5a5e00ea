-- Images of user messages (see store/migrations/0023_message_images.sql): an https
-- reference or the sha256 of a file under the data dir, gone with their message.
CREATE TABLE message_images (
    id          TEXT PRIMARY KEY,
    message_id  TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    url         TEXT,
    sha256      TEXT,
    mime        TEXT,
    size        BIGINT,
    detail      TEXT,
    created_at  TEXT NOT NULL,
    CHECK ((url IS NULL) <> (sha256 IS NULL))
);
CREATE INDEX message_images_message ON message_images(message_id, position);
CREATE INDEX message_images_file ON message_images(user_id, sha256) WHERE sha256 IS NOT NULL;
