-- Images of user messages (chat parts of type image_url): an https URL kept by
-- reference, or a data URL's decoded bytes in a file under the data dir named by
-- their sha256 (chatsvc.images.ImageFiles), one file per user and content. A row
-- goes with its message, conversation or user (the foreign keys); the file goes when
-- no row of its user names it any more. Never in the message index.
CREATE TABLE message_images (
    id          TEXT PRIMARY KEY,
    message_id  TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    url         TEXT,
    sha256      TEXT,
    mime        TEXT,
    size        INTEGER,
    detail      TEXT,
    created_at  TEXT NOT NULL,
    CHECK ((url IS NULL) <> (sha256 IS NULL))
);
CREATE INDEX message_images_message ON message_images(message_id, position);
CREATE INDEX message_images_file ON message_images(user_id, sha256) WHERE sha256 IS NOT NULL;
