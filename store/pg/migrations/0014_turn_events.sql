-- A streamed turn's SSE events and the stop marker (see
-- store/migrations/0014_turn_events.sql).
CREATE TABLE turn_events (
    turn_id         TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    data            TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (turn_id, seq)
);
CREATE INDEX turn_events_conversation ON turn_events(conversation_id);
ALTER TABLE conversations ADD COLUMN turn_stop TEXT;
