"""User memory: CRUD with soft delete, a per-user version, and KNN recall.

`user_memory` is the source of truth; `user_memory_vec` is a derived index. A
write replaces the memory's vector row in the same transaction (sqlite-vec 0.1.9
has no upsert: delete + insert); a soft delete drops it at once, so a tombstone
is never recalled. A row left without a vector (embeddings or sqlite-vec were
down) is found by `unembedded` for backfill and `chatsvc reindex`.
Injection order and budgets are not decided here but in context/memory.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from store._errors import NotFound
from store.clock import new_id, now_iso
from store.contract import Database
from store.sql import record
from store.vectors import KNN_MAX_K, OwnVectors, Scope, VectorSpec, content_hash

MEMORY_TYPES = ("preference", "instruction", "profile", "note")
SCOPES = ("global", "project")

COLUMNS = (
    "m.id, m.user_id, m.type, m.scope, m.project_id, m.origin, m.content, "
    "m.created_at, m.updated_at"
)
# Memories that apply in a project: every global one plus that project's own.
APPLIES = "(m.scope = 'global' OR m.project_id = $project)"
VECTORS = VectorSpec(
    table="user_memory_vec", id_column="memory_id", source="user_memory m", alias="m",
    text="m.content", owner="m.user_id", live="m.deleted_at IS NULL",
    keep="m.deleted_at IS NULL",
)


@dataclass(frozen=True)
class Memory:
    id: str
    user_id: str
    type: str
    scope: str
    project_id: str | None
    origin: str
    content: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class MemorySnapshot:
    """The memories that apply to (user, project) and the version they were read at."""

    memories: list[Memory]
    version: int



class Memories(OwnVectors):
    """One user's memories; every method takes the owner, so a foreign id is NotFound."""

    table = VECTORS.table

    def __init__(self, db: Database) -> None:
        self.db = db
        self._vectors = db.vectors(VECTORS)

    # -- writes ------------------------------------------------------------------------

    def create(
        self,
        user_id: str,
        *,
        type: str,
        scope: str,
        content: str,
        project_id: str | None = None,
        origin: str = "manual",
        embedding: Sequence[float] | None = None,
    ) -> Memory:
        """Insert a memory; with `embedding` (of `content`) its vector row too."""
        memory_id, now, digest = new_id(), now_iso(), content_hash(content)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO user_memory(id, user_id, type, scope, project_id, origin, content, "
                "content_hash, created_at, updated_at) VALUES ($id, $user, $type, $scope, "
                "$project, $origin, $content, $hash, $now, $now)",
                {"id": memory_id, "user": user_id, "type": type, "scope": scope,
                 "project": project_id, "origin": origin, "content": content, "hash": digest,
                 "now": now},
            )
            if embedding is not None:
                self._vectors.put(user_id, [(memory_id, embedding, digest)])
            self._bump_version(user_id)
        return self.get(user_id, memory_id)

    def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        type: str,
        scope: str,
        project_id: str | None,
        content: str,
        embedding: Sequence[float] | None = None,
    ) -> Memory:
        """Replace a live memory's fields. New content without `embedding` drops the
        vector row (left for backfill) rather than letting it match the old text."""
        digest = content_hash(content)
        with self.db.transaction():
            before = self.db.scalar(
                "SELECT content_hash FROM user_memory "
                "WHERE id = $id AND user_id = $user AND deleted_at IS NULL",
                {"id": memory_id, "user": user_id},
            )
            if before is None:
                raise NotFound(f"no memory {memory_id}")
            self.db.execute(
                "UPDATE user_memory SET type = $type, scope = $scope, project_id = $project, "
                "content = $content, content_hash = $hash, updated_at = $now WHERE id = $id",
                {"type": type, "scope": scope, "project": project_id, "content": content,
                 "hash": digest, "now": now_iso(), "id": memory_id},
            )
            if embedding is not None:
                self._vectors.put(user_id, [(memory_id, embedding, digest)])
            elif before != digest:
                self._vectors.drop([memory_id], user_id=user_id)
            self._bump_version(user_id)
        return self.get(user_id, memory_id)

    def delete(self, user_id: str, memory_id: str) -> None:
        """Soft delete: the row stays as a tombstone, its vector goes at once."""
        now = now_iso()
        with self.db.transaction():
            cursor = self.db.execute(
                "UPDATE user_memory SET deleted_at = $now, updated_at = $now "
                "WHERE id = $id AND user_id = $user AND deleted_at IS NULL",
                {"now": now, "id": memory_id, "user": user_id},
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no memory {memory_id}")
            self._vectors.drop([memory_id], user_id=user_id)
            self._bump_version(user_id)

    def _bump_version(self, user_id: str) -> None:
        self.db.execute(
            "INSERT INTO user_memory_versions(user_id, version) VALUES ($user, 1) "
            "ON CONFLICT(user_id) DO UPDATE SET version = user_memory_versions.version + 1",
            {"user": user_id},
        )

    # -- reads -------------------------------------------------------------------------

    def _memories(self, where: str, params: dict) -> list[Memory]:
        # Positional rows straight into Memory: a mapping row per row doubles the cost.
        return self.db.fetch(
            f"SELECT {COLUMNS} FROM user_memory m WHERE m.user_id = $user "
            f"AND m.deleted_at IS NULL AND {where} ORDER BY m.id", params, Memory)

    def get(self, user_id: str, memory_id: str) -> Memory:
        found = self._memories("m.id = $id", {"user": user_id, "id": memory_id})
        if not found:
            raise NotFound(f"no memory {memory_id}")
        return found[0]

    def list(self, user_id: str, *, project_id: str | None = None) -> list[Memory]:
        """Live memories: all of them, or those that apply in `project_id`."""
        where = "TRUE" if project_id is None else APPLIES
        return self._memories(where, {"user": user_id, "project": project_id})

    def snapshot(self, user_id: str, project_id: str | None) -> MemorySnapshot:
        """What applies in `project_id` (global only when None) plus the version,
        read in one snapshot so the two agree."""
        with self.db.snapshot():
            memories = self._memories(APPLIES, {"user": user_id, "project": project_id})
            version = self.version(user_id)
        return MemorySnapshot(memories, version)

    def version(self, user_id: str) -> int:
        """Changes with every create, update and delete of the user's memory."""
        found = self.db.scalar(
            "SELECT version FROM user_memory_versions WHERE user_id = $user", {"user": user_id})
        return found or 0

    def recall(
        self, user_id: str, vector: Sequence[float], *, k: int, project_id: str | None
    ) -> list[tuple[Memory, float]]:
        """The user's `k` nearest vectors (cosine), kept when their memory is live,
        applies in `project_id` and still has the content the vector was made from."""
        where = f"m.user_id = $user AND m.deleted_at IS NULL AND {APPLIES}"
        params = {"user": user_id, "project": project_id}
        found = self._vectors.nearest_rows(
            vector, k=max(1, min(k, KNN_MAX_K)), columns=COLUMNS,
            scope=Scope(user_id=user_id, where=where, params=params))
        return [(record(Memory, row), distance) for row, distance in found]
