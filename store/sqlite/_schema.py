"""SQLite's vector tables: derived indexes over plain tables, for one model + dimension.

The plain tables are the source of truth; every table here can be dropped and
rebuilt (`chatsvc reindex`). The meta table records which model and dimension
the vectors were built with, so a change of model is detected as a CONFLICT
instead of a crash. Each vector row keeps the content hash it was made from, so
stale rows can be found and re-embedded.
"""

from __future__ import annotations

from typing import Any

from store import _meta
from store.clock import new_id
from store.vectors import adopt_embedded, forget_embedded

# Changed by every reset: in-memory vector indexes (store/sqlite/_vecfeed.py) key on it.
EPOCH_KEY = "vector_epoch"

# name -> DDL template; {dim} is the embedding dimension.
VECTOR_TABLES: dict[str, str] = {
    "fact_vec": (
        "CREATE VIRTUAL TABLE IF NOT EXISTS fact_vec USING vec0("
        "fact_id TEXT PRIMARY KEY, user_id TEXT partition key, "
        "embedding float[{dim}] distance_metric=cosine, +content_hash TEXT)"
    ),
    "user_memory_vec": (
        "CREATE VIRTUAL TABLE IF NOT EXISTS user_memory_vec USING vec0("
        "memory_id TEXT PRIMARY KEY, user_id TEXT partition key, "
        "embedding float[{dim}] distance_metric=cosine, +content_hash TEXT)"
    ),
    # Knowledge chunks: a plain table of float32[{dim}] blobs, not vec0. Search runs on
    # an in-memory index (store/sqlite/_vecindex.py) that follows the change feed
    # (store/sqlite/_vecfeed.py); reading 100k x 768 vectors out of vec0 costs ~22 s of
    # CPU here, a plain table ~4 s (evals/results/knowledge_bench.md).
    "chunk_vec": (
        "CREATE TABLE IF NOT EXISTS chunk_vec (chunk_id TEXT PRIMARY KEY, "
        "embedding BLOB NOT NULL CHECK (length(embedding) = 4 * {dim}), "
        "content_hash TEXT NOT NULL)"
    ),
    # Conversation messages: per user like facts, but a plain table like chunks (a
    # user's 100k messages load in seconds, not half a minute); searched through a
    # binary-quantised per-user copy (store/sqlite/_vectors.py). A deleted message's
    # vector goes with it, and `MESSAGE_VEC_FEED` puts that delete in the change feed.
    "message_vec": (
        "CREATE TABLE IF NOT EXISTS message_vec (message_id TEXT PRIMARY KEY "
        "REFERENCES message_index(id) ON DELETE CASCADE, user_id TEXT NOT NULL, "
        "embedding BLOB NOT NULL CHECK (length(embedding) = 4 * {dim}), "
        "content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS message_vec_user ON message_vec(user_id)"
    ),
}


# A message's vector goes by cascade (no vector write records it): the trigger does.
MESSAGE_VEC_FEED = (
    "CREATE TRIGGER IF NOT EXISTS message_vec_feed AFTER DELETE ON message_vec BEGIN "
    "INSERT INTO vec_changes(tbl, row_id, user_id) "
    "VALUES ('message_vec', old.message_id, old.user_id); END"
)


def create_tables(conn: Any, model: str, dim: int) -> None:
    for ddl in VECTOR_TABLES.values():
        for statement in ddl.format(dim=dim).split(";"):
            conn.execute(statement)
    conn.execute(MESSAGE_VEC_FEED)
    for statement in adopt_embedded():
        conn.execute(statement)
    _meta.record_model(conn, model, dim)


def drop_tables(conn: Any) -> None:
    for name in VECTOR_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {name}")
    for statement in forget_embedded():
        conn.execute(statement)
    conn.execute("DELETE FROM vec_changes")  # of tables that are gone; the epoch changes
    _meta.put(conn, EPOCH_KEY, new_id())
    _meta.forget_model(conn)
