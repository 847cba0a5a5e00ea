-- The names a user's messages were written under (imported group chats), read per
-- conversation search by a loose index scan (store/recall/_search.py, _SPEAKERS_SQL):
-- one seek per name instead of a pass over the user's messages.
CREATE INDEX messages_speaker ON messages(user_id, name) WHERE name IS NOT NULL;
