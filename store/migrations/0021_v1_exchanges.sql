-- /v1 exchanges kept as conversation turns (issue 39, store/exchanges.py).
-- `client_key`: the conversation's name as a /v1 client chose it (a header), unique per
-- user only, so one user's name never reaches another user's conversation.
-- `chain`: a /v1 message's content hash of the conversation up to and including it, so
-- the stored message that ends the longest known prefix of a request is one indexed
-- lookup (messages stored by /api/chat have none).
ALTER TABLE conversations ADD COLUMN client_key TEXT;
CREATE UNIQUE INDEX conversations_client_key ON conversations(user_id, client_key)
    WHERE client_key IS NOT NULL;
ALTER TABLE messages ADD COLUMN chain TEXT;
CREATE INDEX messages_chain ON messages(user_id, chain) WHERE chain IS NOT NULL;
