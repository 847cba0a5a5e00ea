"""Knowledge entries, their chunks, full-text and vector search.

An entry with `owner_id` None is shared (CLI-indexed files, published posts);
otherwise only its owner sees it. Entries are keyed by (owner, source_type,
source_id) when a source id is given, else by content hash, so indexing the same
thing twice is a no-op and a changed source replaces its entry.

Writes go: `save` or `save_many` (entries + chunks + full-text rows, one transaction) -> the
caller embeds the returned `EmbedJob`s -> `save_embeddings`. Chunks without a
vector are still found by keyword search and picked up by `unembedded` later.
Entries live in `_entries`, pins (the documents a conversation starts with) in
`_pins`, search and its fusion in `_search`, the in-memory
vector index in the backend's vector index.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.contract import Database, EmbedJob
from store.knowledge._entries import Entries
from store.knowledge._pins import Pins
from store.knowledge._records import (
    VECTORS,
    ChunkIn,
    Entry,
    EntryIn,
    Hit,
    Saved,
    content_hash,
    embed_text,
)
from store.knowledge._search import Search

_OF_ENTRY = "c.entry_id = $entry"
# A chunk whose entry has an unfinished job is that job's to embed (store/jobs.py):
# a backfill sweep on another worker or replica leaves it, so nothing is embedded
# twice while the job runs, or while it waits for a lapsed lease to be taken over.
_NO_OPEN_JOB = ("NOT EXISTS (SELECT 1 FROM jobs j WHERE j.entry_id = c.entry_id "
                "AND j.status IN ('queued', 'running'))")


class Knowledge(Entries, Pins, Search):
    """Implements `Reindexable` over `chunk_vec`."""

    table = VECTORS.table

    def __init__(self, db: Database, *, rescore: int = 400) -> None:
        self.db = db
        self._vectors = db.vectors(VECTORS, rescore=rescore)

    def unembedded(self, *, limit: int) -> list[EmbedJob]:
        """Chunks without a current vector that no unfinished job will embed."""
        return self._vectors.unembedded(limit=limit, where=_NO_OPEN_JOB)

    def pending_count(self, entry_id: str | None = None) -> int:
        """Chunks (of one entry, or all) without a current vector."""
        if entry_id is None:
            return self._vectors.pending_count()
        return self._vectors.pending_count(_OF_ENTRY, {"entry": entry_id})

    def entry_chunks(self, entry_id: str, *, offset: int, limit: int
                     ) -> list[tuple[EmbedJob, bool]]:
        """The entry's chunks in order from `offset`, each with whether its vector is
        current (an indexing job's unit of progress)."""
        return self._vectors.scan(_OF_ENTRY, {"entry": entry_id}, offset=offset, limit=limit)

    def save_embeddings(self, items: list[tuple[EmbedJob, Sequence[float]]]) -> None:
        self._vectors.save(items)


__all__ = [
    "ChunkIn", "Entry", "EntryIn", "Hit", "Knowledge", "Saved", "content_hash",
    "embed_text",
]
