"""The message index: keys built in the background, their full-text rows and vectors.

Nothing here runs in a chat request. `build_keys` keys messages that have no key of
the configured variant (new, imported, or keyed under another variant) and writes
their full-text rows (the whole key; the stored `key` is what is embedded: a long
message's first passage, `_keys.embedded_key`); `unembedded` (the backfill's first
step) does that first, so keyword search keeps up even while the embedder is down;
vectors then go through the vector-index component like every other vector table.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.contract import Database, EmbedJob
from store.fts import index_text
from store.recall._keys import DEFAULT_KEYS, KeyedMessage, embedded_key, index_key
from store.sql import SQLITE, record, share_lock
from store.vectors import VectorSpec, content_hash

KEY_BATCH = 500
VECTORS = VectorSpec(
    table="message_vec", id_column="message_id", source="message_index k", alias="k",
    text="k.key", owner="k.user_id", order="seq", quantised=True,
)
# Messages with text but no key of variant $keys, each with the one it follows.
_UNKEYED_SQL = (
    "SELECT m.seq, m.id, m.user_id, m.role, m.name, m.content, m.created_at, "
    "p.role AS previous_role, p.name AS previous_name, p.content AS previous_content "
    "FROM messages m LEFT JOIN message_index k ON k.seq = m.seq "
    "LEFT JOIN messages p ON p.id = m.parent_id "
    "WHERE m.seq > $since AND (k.seq IS NULL OR k.keys <> $keys) AND m.content <> '' "
    "ORDER BY m.seq LIMIT $limit"
)
# Where the next key scan may start: below the first answer still streaming (its text
# arrives with `finish_turn`), else past the last message.
_KEY_TOP_SQL = (
    "SELECT coalesce((SELECT min(seq) - 1 FROM messages WHERE seq > $since "
    "AND status = 'pending'), (SELECT max(seq) FROM messages), 0)"
)
_INDEXED = (
    "FROM message_index k JOIN message_vec v ON v.message_id = k.id "
    "AND v.content_hash = k.content_hash WHERE k.keys = $keys"
)


class Indexing:
    """The indexing half of `MessageIndex` (implements `Reindexable` over `message_vec`)."""

    table = VECTORS.table

    def __init__(self, db: Database, *, keys: str = DEFAULT_KEYS, rescore: int = 400) -> None:
        self.db = db
        self.keys = keys
        self._vectors = db.vectors(VECTORS, rescore=rescore)
        # Watermarks: every message up to `_keyed` has a current key, every key up to
        # `_embedded[1]` a current vector (while the vector tables are `_embedded[0]`'s),
        # so a pass reads only new rows. In memory: a restart scans everything once.
        # SQLite only: its writers commit in `seq` order; PostgreSQL's sequence does not
        # (a lower seq may commit later), so there every pass scans from the start.
        self._ordered = db.dialect == SQLITE
        self._keyed = 0
        self._embedded: tuple[object, int] = (None, 0)

    def build_keys(self, *, limit: int = KEY_BATCH) -> int:
        """Key up to `limit` unkeyed messages (one transaction); how many were keyed."""
        with self.db.transaction():
            since = self._keyed
            top = self.db.scalar(_KEY_TOP_SQL, {"since": since}) if self._ordered else 0
            rows = self.db.execute(
                _UNKEYED_SQL + share_lock(self.db.dialect, "m"),
                {"keys": self.keys, "limit": limit, "since": since},
            ).fetchall()
            messages = [(row, record(KeyedMessage, row)) for row in rows]
            keyed = [(row, embedded_key(self.keys, m), index_key(self.keys, m))
                     for row, m in messages]
            self.db.executemany(
                "INSERT INTO message_index(seq, id, user_id, keys, key, content_hash, "
                "created_at) VALUES ($seq, $id, $user, $keys, $key, $hash, $at) "
                "ON CONFLICT(seq) DO UPDATE SET keys = excluded.keys, key = excluded.key, "
                "content_hash = excluded.content_hash",
                [{"seq": row["seq"], "id": row["id"], "user": row["user_id"], "keys": self.keys,
                  "key": key, "hash": content_hash(key), "at": row["created_at"]}
                 for row, key, _ in keyed])
            self.db.executemany("DELETE FROM message_fts WHERE rowid = $seq",
                                [{"seq": row["seq"]} for row, _, _ in keyed])
            self.db.executemany("INSERT INTO message_fts(rowid, body) VALUES ($seq, $body)",
                                [{"seq": row["seq"], "body": index_text(whole)}
                                 for row, _, whole in keyed])
        if self._ordered:
            # A full batch may leave more unkeyed rows after its last one.
            self._keyed = min(top, rows[-1]["seq"]) if len(rows) == limit else top
        return len(rows)

    def forget_user(self, user_id: str) -> None:
        """The user's vectors with their in-memory copy (`store.accounts`); the index and
        full-text rows go with the messages (foreign key, trigger)."""
        self._vectors.forget(user_id)

    def unembedded(self, *, limit: int) -> list[EmbedJob]:
        """Keys every unkeyed message first, then the keys without a current vector."""
        while self.build_keys():
            pass
        since = self._embedded_since()
        top = (self.db.scalar("SELECT coalesce(max(seq), 0) FROM message_index")
               if self._ordered else 0)
        jobs = self._vectors.unembedded(limit=limit, where="k.seq > $since",
                                        params={"since": since})
        if self._ordered:
            if jobs:  # every key before the first job's has its vector
                top = self.db.scalar("SELECT seq - 1 FROM message_index WHERE id = $id",
                                     {"id": jobs[0].row_id})
            # Not past `_keyed`: a message below it (an answer then streaming) may get
            # its key, and so need a vector, later.
            self._embedded = (self.db.vector_state, max(since, min(top, self._keyed)))
        return jobs

    def _embedded_since(self) -> int:
        state, seq = self._embedded
        return seq if state is self.db.vector_state else 0  # a reindex drops every vector

    def save_embeddings(self, items: list[tuple[EmbedJob, Sequence[float]]]) -> None:
        self._vectors.save(items)

    def status(self, user_id: str) -> tuple[int, int]:
        """(the user's messages with text, those with a vector of their current key)."""
        params = {"user": user_id, "keys": self.keys}
        total = self.db.scalar(
            "SELECT count(*) FROM messages WHERE user_id = $user AND content <> ''", params)
        if not self.db.vector_state.ok:
            return total, 0
        return total, self.db.scalar(f"SELECT count(*) {_INDEXED} AND k.user_id = $user", params)

    def pending_count(self) -> int:
        """Messages (of every user) waiting for a key or a vector; counted past the
        watermarks (/health asks often, and behind them every message is indexed)."""
        if not self.db.vector_state.ok:
            return self.db.scalar("SELECT count(*) FROM messages WHERE content <> ''")
        since = min(self._keyed, self._embedded_since())
        params = {"keys": self.keys, "since": since}
        total = self.db.scalar(
            "SELECT count(*) FROM messages WHERE seq > $since AND content <> ''", params)
        return total - self.db.scalar(f"SELECT count(*) {_INDEXED} AND k.seq > $since", params)
