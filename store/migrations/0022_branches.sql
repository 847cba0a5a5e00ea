-- Chat operations (issue 39): branches, archive, feedback.
-- Each message follows its `parent_id` (NULL: the conversation's first message), so a
-- regenerated answer is a sibling of the old one and an edited question a sibling of
-- the one it replaces. The visible branch runs through `chosen_id` (NULL: the newest
-- first message) up to the first message and down through the newest reply at each
-- step (store/branches.py), so a turn that continues it changes nothing here.
-- `off_branch` marks the messages not on it: history, extraction and recall skip them.
-- Existing conversations are linear: each message follows the one before it.
ALTER TABLE messages ADD COLUMN parent_id TEXT;
ALTER TABLE messages ADD COLUMN off_branch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN chosen_id TEXT;
ALTER TABLE conversations ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET parent_id = (
    SELECT p.id FROM messages p WHERE p.conversation_id = messages.conversation_id
    AND p.seq < messages.seq ORDER BY p.seq DESC LIMIT 1);

-- A thumbs up or down on an answer, with an optional comment; one per message.
CREATE TABLE message_feedback (
    message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    rating     TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    comment    TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX message_feedback_user ON message_feedback(user_id);
