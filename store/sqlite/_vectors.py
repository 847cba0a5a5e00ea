"""SQLite's vector index: sqlite-vec tables as the persistent copy, numpy in memory.

vec0's KNN reads every vector of a user's partition out of SQLite on each query
(~15 ms at 10k x 384 here); an in-memory index per user (`_vecindex.Index`: sign bits
for the scan, float32 for rescoring, so distances are vec0's) answers in a fraction of
that. A shared index (knowledge chunks, a plain table of float32 blobs) keeps float16
for rescoring and filters on owner/kind masks; so do the conversation messages.

Every vector write records its row ids in the change feed (`vec_changes`) inside the
writing transaction, and each in-memory index follows the feed (`_vecfeed.Followed`):
a write by this or another process costs the next search the changed rows only; a
reindex (a new epoch) reloads everything.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from store._errors import QueryFailed, VectorUnavailable
from store.contract import Database
from store.sql import in_list
from store.sqlite import _vecfeed
from store.sqlite._vecindex import Index, Row
from store.vectors import Neighbour, Scope, VectorIndex, VectorRow, VectorSpec

PARTITIONS = 32  # per-user indexes kept in memory, least recently used dropped
LOOKUP_BATCH = 500  # ids per IN list


def _blob(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


class SqliteVectors(VectorIndex):
    """Per-user vec0 tables (`spec.owner` set) or one shared blob table (None)."""

    def __init__(self, db: Database, spec: VectorSpec, *, rescore: int = 400) -> None:
        super().__init__(db, spec)
        self.rescore = rescore
        # Keyed by user (None: the shared index), least recently used first.
        self._followed: OrderedDict[str | None, _vecfeed.Followed] = OrderedDict()
        self._lock = threading.Lock()

    # -- writes ----------------------------------------------------------------------

    def _write(self, rows: list[VectorRow]) -> None:
        for row in rows:
            self.check(row[2])
        # Keyed by id: a row listed twice is stored once, as the table holds it.
        unique = list({row[0]: row for row in rows}.values())
        if self.spec.owner is None:
            self._write_shared(unique)
            return
        t, key = self.spec.table, self.spec.id_column
        by_user: dict[str, list[str]] = {}
        for row_id, user_id, vector, digest in unique:
            # sqlite-vec 0.1.9 has no upsert: delete + insert in the caller's transaction.
            self.db.execute(f"DELETE FROM {t} WHERE {key} = $id", {"id": row_id})
            self.db.execute(
                f"INSERT INTO {t}({key}, user_id, embedding, content_hash) "
                "VALUES ($id, $user, $blob, $hash)",
                {"id": row_id, "user": user_id, "blob": _blob(vector), "hash": digest})
            by_user.setdefault(user_id, []).append(row_id)
        for user_id, ids in by_user.items():
            _vecfeed.record(self.db, t, user_id, ids)

    def _write_shared(self, rows: list[VectorRow]) -> None:
        t, key = self.spec.table, self.spec.id_column
        self.db.executemany(
            f"INSERT INTO {t}({key}, embedding, content_hash) VALUES ($id, $blob, $hash) "
            f"ON CONFLICT({key}) DO UPDATE SET embedding = excluded.embedding, "
            "content_hash = excluded.content_hash",
            [{"id": row_id, "blob": _blob(vector), "hash": digest}
             for row_id, _, vector, digest in rows])
        _vecfeed.record(self.db, t, None, [row[0] for row in rows])

    def _drop(self, row_ids: Sequence[str], user_id: str | None) -> None:
        self.db.executemany(
            f"DELETE FROM {self.spec.table} WHERE {self.spec.id_column} = $id",
            [{"id": row_id} for row_id in row_ids])
        _vecfeed.record(self.db, self.spec.table, user_id, list(row_ids))

    def forget(self, user_id: str) -> None:
        super().forget(user_id)
        # The feed's rows, the in-memory copy and its snapshot file would outlive the
        # account; another process's copy of the user's rows is searched by nobody now
        # and goes when it is the least recently used.
        self.db.execute("DELETE FROM vec_changes WHERE tbl = $t AND user_id = $u",
                        {"t": self.spec.table, "u": user_id})
        with self._lock:
            followed = self._followed.pop(user_id, None)
        (followed or self._make(user_id)).discard()

    # -- search ----------------------------------------------------------------------

    def nearest(self, vector: Sequence[float], *, k: int, scope: Scope) -> list[Neighbour]:
        self.db.require_vectors()
        self.check(vector)
        shared = self.spec.owner is None
        key = None if shared else scope.user_id
        # Inside a transaction this connection sees uncommitted changes, which must not
        # reach the kept index (a rollback would leave them there, and their seqs may
        # be handed out again): such a search reads into an index of its own.
        inside = self.db.in_transaction()
        try:
            view = (self._make(key, persist=False) if inside else self.index(key)).view(
                lambda: _vecfeed.position(self.db))
        except QueryFailed as exc:  # e.g. the table went with another process's reindex
            raise VectorUnavailable(f"vector table {self.spec.table} unreadable: {exc}") from exc
        found = view.search(np.asarray(vector, dtype=np.float32), viewer_id=scope.viewer_id,
                            source_type=scope.kind, k=k, rescore=max(self.rescore, k))
        # A shared index's rows are checked against their source by the caller's read.
        return [(row_id, distance, None if shared else digest)
                for row_id, distance, digest in found]

    def index(self, user_id: str | None) -> _vecfeed.Followed:
        """The in-memory index of `user_id`'s rows (None: the shared index)."""
        with self._lock:
            followed = self._followed.get(user_id)
            if followed is None:
                followed = self._followed[user_id] = self._make(user_id)
            self._followed.move_to_end(user_id)
            while len(self._followed) > PARTITIONS:
                self._followed.popitem(last=False)
            return followed

    def _make(self, user_id: str | None, *, persist: bool = True) -> _vecfeed.Followed:
        # Float16 halves the memory of the large indexes; facts and memories keep
        # float32, so their distances (compared with thresholds) are vec0's.
        dtype = np.float16 if self.spec.quantised or self.spec.owner is None else np.float32
        return _vecfeed.Followed(
            Index(self.db.embed_dim, dtype), _Rows(self, user_id),
            file=_vecfeed.snapshot_file(self.db.path, self.spec.table, user_id) if persist
            else None,
            identity={"table": self.spec.table, "owner": user_id or "",
                      "model": self.db.embed_model, "dim": self.db.embed_dim,
                      "dtype": np.dtype(dtype).name})


class _Rows:
    """One index's rows and changes in the database (`_vecfeed.Source`)."""

    def __init__(self, vectors: SqliteVectors, user_id: str | None) -> None:
        self.db, self.spec, self.user_id = vectors.db, vectors.spec, user_id

    def changed(self, since: int, top: int) -> list[str]:
        return self.db.fetch(
            "SELECT DISTINCT row_id FROM vec_changes WHERE tbl = $t AND user_id = $o "
            "AND seq > $since AND seq <= $top",
            {"t": self.spec.table, "o": self.user_id or "", "since": since, "top": top},
            lambda row_id: row_id)

    def mark(self, seq: int) -> str:
        return self.db.scalar("SELECT coalesce((SELECT row_id FROM vec_changes "
                              "WHERE seq = $seq), '')", {"seq": seq})

    def rows(self, ids: list[str] | None) -> list[Row]:
        s = self.spec
        if s.owner is not None:
            # vec0 scans its whole table for an IN list; it finds one primary key at once.
            query = (f"SELECT {s.id_column}, embedding, '', '', content_hash FROM {s.table} "
                     f"WHERE user_id = $user")
            if ids is None:
                return self.db.fetch(query, {"user": self.user_id}, lambda *row: row)
            return [row for row_id in ids for row in self.db.fetch(
                f"{query} AND {s.id_column} = $id", {"user": self.user_id, "id": row_id},
                lambda *row: row)]
        select = (f"SELECT v.{s.id_column}, v.embedding, {s.labels}, v.content_hash "
                  f"FROM {s.table} v, {s.source} WHERE {s.alias}.id = v.{s.id_column}")
        if ids is None:
            return self.db.fetch(select, {}, lambda *row: row)
        found: list[Row] = []
        for start in range(0, len(ids), LOOKUP_BATCH):
            marks, params = in_list("id", ids[start:start + LOOKUP_BATCH])
            found += self.db.fetch(f"{select} AND v.{s.id_column} IN {marks}", params,
                                   lambda *row: row)
        return found
