"""The store contract: what every backend (SQLite, PostgreSQL) offers the service.

Callers type against these; `store.backend` picks the implementation.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class VectorStatus(enum.Enum):
    OK = "ok"
    UNAVAILABLE = "unavailable"  # the vector extension did not load
    CONFLICT = "conflict"  # vectors were built with another model or dimension


@dataclass(frozen=True)
class VectorState:
    """Whether vector search can run, and if not, why (`detail` is operator-facing)."""

    status: VectorStatus
    detail: str

    @property
    def ok(self) -> bool:
        return self.status is VectorStatus.OK

    @property
    def conflict(self) -> bool:
        return self.status is VectorStatus.CONFLICT


@dataclass(frozen=True)
class EmbedJob:
    """One row whose vector is missing or stale (its content hash changed)."""

    row_id: str
    text: str
    content_hash: str


class Reindexable(Protocol):
    """What a domain store with a vector table offers to backfill and `chatsvc reindex`.

    `unembedded` returns rows with no vector or a vector made from other content;
    `save_embeddings` replaces their vector rows. Reindex = `reset_vectors()` on the
    database, then loop `unembedded` -> embed -> `save_embeddings` until nothing is left.
    """

    table: str

    def unembedded(self, *, limit: int) -> list[EmbedJob]: ...

    def save_embeddings(self, items: list[tuple[EmbedJob, list[float]]]) -> None: ...
