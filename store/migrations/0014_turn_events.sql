-- The SSE events of a conversation's streamed turn, appended in batches as the answer
-- streams, so that a client re-attaches (GET /api/conversations/{id}/stream) on any
-- worker or replica. `seq` is the event's SSE id, from 1 within the turn (`turn_id`,
-- the question's id). Kept until the conversation's next turn starts, or for
-- store.turn_events.RETAIN_SECONDS after the turn's last event.
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
-- POST /api/conversations/{id}/stop: the id of the running turn asked to stop; the
-- turn (in whichever process runs it) reads it between event batches.
ALTER TABLE conversations ADD COLUMN turn_stop TEXT;
