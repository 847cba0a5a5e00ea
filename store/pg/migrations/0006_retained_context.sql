-- The per-message block sent with a user message, kept for the `in_history` layout,
-- which replays it with that message on later turns.
ALTER TABLE messages ADD COLUMN context TEXT;
