"""Knowledge records, hashes and the row mappers shared by entries and search."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from store.contract import EmbedJob
from store.sql import record
from store.vectors import VectorSpec

TITLE_IN_EMBEDDING = 100  # chars of the title embedded with each chunk

ENTRY_COLUMNS = (
    "e.*, (SELECT count(*) FROM knowledge_chunks c WHERE c.entry_id = e.id) AS chunk_count"
)
# Entries the viewer may see: shared ones and their own.
VISIBLE = "(e.owner_id IS NULL OR e.owner_id = $viewer)"
# Typed, so PostgreSQL can bind a NULL type server-side.
OF_TYPE = "(CAST($type AS TEXT) IS NULL OR e.source_type = $type)"
# $pinned: NULL (any), 1 (pinned ones) or 0 (the others); typed like OF_TYPE.
PINNED = (
    "(CAST($pinned AS INTEGER) IS NULL "
    "OR (e.pinned_at IS NOT NULL) = (CAST($pinned AS INTEGER) = 1))"
)
VECTORS = VectorSpec(
    table="chunk_vec", id_column="chunk_id",
    source="knowledge_chunks c JOIN knowledge_entries e ON e.id = c.entry_id", alias="c",
    # What gets embedded for a chunk: its entry's title gives it topic context.
    text=f"substr(e.title, 1, {TITLE_IN_EMBEDDING}) || '\n' || c.content",
    owner=None, order="seq", labels="coalesce(e.owner_id, ''), e.source_type",
)


@dataclass(frozen=True)
class ChunkIn:
    text: str
    language: str


@dataclass(frozen=True)
class EntryIn:
    """One entry to save (`Knowledge.save_many`): its text already cut into chunks."""

    title: str
    content: str
    source_type: str
    chunks: list[ChunkIn]
    source_id: str | None = None
    metadata: dict | None = None
    abstract: str = ""
    overview: str = ""


@dataclass(frozen=True)
class Entry:
    id: str
    owner_id: str | None
    title: str
    source_type: str
    source_id: str | None
    content: str
    abstract: str
    overview: str
    tiers_by: str
    metadata: dict
    content_hash: str
    created_at: str
    updated_at: str
    chunks: int
    pinned_at: str | None  # None: not pinned (store/knowledge/_pins.py)
    pinned_project_id: str | None


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    entry_id: str
    title: str
    source_type: str
    source_id: str | None
    chunk_index: int
    abstract: str
    overview: str
    text: str
    score: float


@dataclass(frozen=True)
class Saved:
    entry: Entry
    status: str  # created | replaced | unchanged
    jobs: list[EmbedJob] = field(default_factory=list)


def content_hash(title: str, content: str) -> str:
    return hashlib.sha256(f"{title}\n\x00{content}".encode()).hexdigest()


def embed_text(title: str, chunk: str) -> str:
    """What gets embedded for a chunk (the SQL twin is `VECTORS.text`)."""
    return f"{title[:TITLE_IN_EMBEDDING]}\n{chunk}"


def entry_from(row) -> Entry:
    return record(Entry, row, metadata=json.loads(row["metadata"]), chunks=row["chunk_count"])

def hit_from(row, score: float) -> Hit:
    return record(Hit, row, score=score)
