"""Snapshot pinning: the stable-prefix data a conversation started with.

A conversation keeps its snapshot (fact sheet id + the data of every stable
layer, with a content version per layer) for later turns until `ttl_seconds`
have passed, so a fact sheet regenerated mid-conversation does not change the
bytes (and break the upstream cache) of a conversation already running. chatsvc
stores it as JSON on the conversation; this module only decides and serialises.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import lru_cache

from context.layers import ConversationSummary, Doc, MemoryItem, SheetFact

PARSED_SNAPSHOTS = 256  # conversations with turns in flight in one process, about


def _version(items: Sequence[object]) -> str:
    canonical = json.dumps([asdict(i) for i in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Snapshot:
    taken_at: datetime
    fact_sheet_id: str | None
    fact_sheet: tuple[SheetFact, ...]
    recent_conversations: tuple[ConversationSummary, ...]
    memory: tuple[MemoryItem, ...]
    docs: tuple[Doc, ...]

    @property
    def memory_version(self) -> str:
        return _version(self.memory)

    @property
    def docs_version(self) -> str:
        return _version(self.docs)

    def is_fresh(self, now: datetime, ttl_seconds: float) -> bool:
        return 0 <= (now - self.taken_at).total_seconds() < ttl_seconds

    def to_json(self) -> str:
        body = {
            "taken_at": self.taken_at.isoformat(),
            "fact_sheet_id": self.fact_sheet_id,
            "memory_version": self.memory_version,
            "docs_version": self.docs_version,
            "fact_sheet": [asdict(f) for f in self.fact_sheet],
            "recent_conversations": [asdict(c) for c in self.recent_conversations],
            "memory": [asdict(m) for m in self.memory],
            "docs": [asdict(d) for d in self.docs],
        }
        return json.dumps(body, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        body = json.loads(text)
        return cls(
            taken_at=datetime.fromisoformat(body["taken_at"]),
            fact_sheet_id=body["fact_sheet_id"],
            fact_sheet=tuple(SheetFact(**f) for f in body["fact_sheet"]),
            recent_conversations=tuple(
                ConversationSummary(**c) for c in body["recent_conversations"]
            ),
            memory=tuple(MemoryItem(**m) for m in body["memory"]),
            docs=tuple(Doc(**d) for d in body["docs"]),
        )


@lru_cache(maxsize=PARSED_SNAPSHOTS)
def _parsed(stored: str) -> Snapshot:
    """Every turn of a conversation pins the same JSON: parse it once (a Snapshot is
    frozen, so turns can share it)."""
    return Snapshot.from_json(stored)


def pinned(stored: str | None, now: datetime, ttl_seconds: float) -> Snapshot | None:
    """The stored snapshot if it is still fresh, else None (take a new one)."""
    if not stored:
        return None
    try:
        snapshot = _parsed(stored)
    except (ValueError, KeyError, TypeError):
        return None  # an older or damaged format: take a new one
    return snapshot if snapshot.is_fresh(now, ttl_seconds) else None
