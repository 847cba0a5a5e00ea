-- /v1 exchanges kept as conversation turns (see store/migrations/0021_v1_exchanges.sql):
-- a conversation's client-chosen name, unique per user, and each /v1 message's hash of
-- the conversation up to and including it.
ALTER TABLE conversations ADD COLUMN client_key TEXT;
CREATE UNIQUE INDEX conversations_client_key ON conversations(user_id, client_key)
    WHERE client_key IS NOT NULL;
ALTER TABLE messages ADD COLUMN chain TEXT;
CREATE INDEX messages_chain ON messages(user_id, chain) WHERE chain IS NOT NULL;
