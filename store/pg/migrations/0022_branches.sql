-- Chat operations (see store/migrations/0022_branches.sql): each message's parent,
-- the messages off the visible branch, the message the visible branch runs through, archived
-- conversations, and feedback on answers. Existing conversations become linear.
ALTER TABLE messages ADD COLUMN parent_id TEXT;
ALTER TABLE messages ADD COLUMN off_branch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN chosen_id TEXT;
ALTER TABLE conversations ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET parent_id = (
    SELECT p.id FROM messages p WHERE p.conversation_id = messages.conversation_id
    AND p.seq < messages.seq ORDER BY p.seq DESC LIMIT 1);

CREATE TABLE message_feedback (
    message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    rating     TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    comment    TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX message_feedback_user ON message_feedback(user_id);
