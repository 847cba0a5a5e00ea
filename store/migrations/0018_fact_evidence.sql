-- The user's own words each extracted fact rests on (issue 41): one row per quote,
-- with the message and conversation it was copied from. No foreign key to messages:
-- deleting a conversation deletes the facts whose every quote was in it first
-- (store/facts.py forget_conversation), then the quotes of the facts that keep others.
CREATE TABLE fact_evidence (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    fact_id         TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    message_id      TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    quote           TEXT NOT NULL,
    said_at         TEXT NOT NULL
);
CREATE INDEX fact_evidence_fact ON fact_evidence(fact_id, id);
CREATE INDEX fact_evidence_conversation ON fact_evidence(user_id, conversation_id);
