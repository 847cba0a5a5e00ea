-- Which text each row's vector was made from (the row's content_hash when the vector
-- was written; NULL: no vector). Written in the vector's transaction, cleared with it
-- (store/vectors.py EMBEDDED): rows waiting for a vector are found through these
-- partial indexes instead of a lookup per row in the vector table (on SQLite's vec0,
-- 2.6 s at 100k facts, on every indexer pass and /health). Existing vectors are adopted
-- when the vector tables are opened.
ALTER TABLE facts ADD COLUMN embedded_hash TEXT;
ALTER TABLE user_memory ADD COLUMN embedded_hash TEXT;
ALTER TABLE knowledge_chunks ADD COLUMN embedded_hash TEXT;
ALTER TABLE message_index ADD COLUMN embedded_hash TEXT;
CREATE INDEX facts_waiting ON facts(id)
    WHERE embedded_hash IS NULL OR embedded_hash <> content_hash;
CREATE INDEX user_memory_waiting ON user_memory(id)
    WHERE embedded_hash IS NULL OR embedded_hash <> content_hash;
CREATE INDEX knowledge_chunks_waiting ON knowledge_chunks(seq)
    WHERE embedded_hash IS NULL OR embedded_hash <> content_hash;
CREATE INDEX message_index_waiting ON message_index(seq)
    WHERE embedded_hash IS NULL OR embedded_hash <> content_hash;
