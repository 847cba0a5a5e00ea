"""User memory for requests and chat turns.

Writes are validated and keep the vector index in step (embedding failure never
fails a save: the row waits for backfill). `MemoryService.injection` is what a
chat turn calls: the deterministic baseline for the stable prefix plus semantic
recall for the per-message block, degrading to the baseline alone, with a
reason and a log line, whenever recall cannot run. `MemoryService` is the glue
between `store.memory` and the embedder, as `FactService` is for facts.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chatsvc._control import RULE as CONTROL_RULE
from chatsvc._control import has_control
from chatsvc._errors import EmbeddingError, InvalidMemory
from chatsvc._settings import Settings
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.embeddings import Embedder
from context.memory import Budget, HasId, select_baseline, select_semantic, stable_hash
from context.tokens import get_tokenizer
from store import Memory, MemoryStore, VectorUnavailable
from store.memory import MEMORY_TYPES, SCOPES

log = logging.getLogger("chatsvc.memory")

BASELINE_CACHE_SIZE = 1024  # (user, project, version) entries per MemoryService

MAX_PROJECT_ID_CHARS = 200

# degraded_reason values (API: `degraded_reason`); the log line carries the detail.
EMPTY_QUERY = "empty_query"
VECTOR_STORE_UNAVAILABLE = "vector_store_unavailable"
DIMENSION_CONFLICT = "dimension_conflict"
EMBEDDINGS_UNAVAILABLE = "embeddings_unavailable"


@dataclass(frozen=True)
class MemoryFields:
    type: str
    scope: str
    project_id: str | None
    content: str


@dataclass(frozen=True)
class MemoryInjection:
    memory: list[Memory]  # baseline: stable prefix
    semantic_memory: list[tuple[Memory, float]]  # (memory, cosine distance): per message
    mode: str  # "semantic" | "deterministic"
    degraded_reason: str | None
    version: int  # Memories.version at the time the baseline was read
    stable_prefix_hash: str


def validated(fields: MemoryFields, *, max_chars: int) -> MemoryFields:
    """`fields` with content stripped, or InvalidMemory naming the first bad field."""
    _check_choice("type", fields.type, MEMORY_TYPES)
    _check_choice("scope", fields.scope, SCOPES)
    content = fields.content.strip()
    for name, value in (("content", content), ("project_id", fields.project_id or "")):
        if has_control(value):
            raise InvalidMemory(name, CONTROL_RULE)
    if not content:
        raise InvalidMemory("content", "must not be empty")
    if len(content) > max_chars:
        raise InvalidMemory("content", f"is {len(content)} characters; the limit is {max_chars}")
    project_id = fields.project_id
    if fields.scope == "project":
        if project_id is None or not project_id.strip():
            raise InvalidMemory("project_id", "is required when scope is project")
        if len(project_id) > MAX_PROJECT_ID_CHARS:
            raise InvalidMemory("project_id", f"is longer than {MAX_PROJECT_ID_CHARS} characters")
    elif project_id is not None:
        raise InvalidMemory("project_id", "is only allowed when scope is project")
    return MemoryFields(fields.type, fields.scope, project_id, content)


def _check_choice(field: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidMemory(field, f"must be one of {', '.join(choices)} (got {value!r})")


def patched(current: Memory, changes: Mapping[str, object]) -> MemoryFields:
    """`current` with `changes` applied; a switch to global scope drops the project."""
    scope = changes.get("scope", current.scope)
    if "project_id" in changes:
        project_id = changes["project_id"]
    else:
        project_id = current.project_id if scope == "project" else None
    return MemoryFields(
        type=changes.get("type", current.type),
        scope=scope,
        project_id=project_id,
        content=changes.get("content", current.content),
    )


class MemoryService:
    def __init__(self, store: MemoryStore, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._tokenizer = get_tokenizer(settings.tokenizer)
        self._baseline_budget = Budget(settings.memory_baseline_max_items,
                                       settings.memory_baseline_max_tokens, self._tokenizer)
        # The baseline depends only on stored data, i.e. on the user's memory version:
        # cache it per version so a turn costs one version lookup, not a read and sort
        # of every memory. Bounded LRU, shared by the worker threads.
        self._baselines: OrderedDict[tuple, tuple[Memory, ...]] = OrderedDict()
        self._baselines_lock = threading.Lock()

    async def create(self, user_id: str, fields: MemoryFields, *, origin: str = "manual"
                     ) -> Memory:
        fields = validated(fields, max_chars=self.settings.memory_max_chars)
        vector = await self._embed_document(fields.content)
        return await in_thread_shielded(
            self.store.create, user_id, type=fields.type, scope=fields.scope,
            project_id=fields.project_id, content=fields.content, origin=origin,
            embedding=vector,
        )

    async def update(self, user_id: str, memory_id: str, changes: Mapping[str, object]
                     ) -> Memory:
        current = await in_thread(self.store.get, user_id, memory_id)
        fields = validated(patched(current, changes), max_chars=self.settings.memory_max_chars)
        changed = fields.content != current.content
        vector = await self._embed_document(fields.content) if changed else None
        return await in_thread_shielded(
            self.store.update, user_id, memory_id, type=fields.type, scope=fields.scope,
            project_id=fields.project_id, content=fields.content, embedding=vector,
        )

    async def delete(self, user_id: str, memory_id: str) -> None:
        await in_thread_shielded(self.store.delete, user_id, memory_id)

    async def baseline(self, user_id: str, project_id: str | None = None) -> list[Memory]:
        """The deterministic baseline alone (what the stable prefix holds)."""
        baseline, _ = await in_thread(self._baseline, user_id, project_id)
        return baseline

    async def injection(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        query_text: str | None = None,
        query_vector: Sequence[float] | None = None,
    ) -> MemoryInjection:
        """Baseline + semantic memories for one message. Pass `query_vector` to reuse
        the turn's query embedding; otherwise `query_text` is embedded here."""
        baseline, version = await in_thread(self._baseline, user_id, project_id)
        semantic, reason = await self.recall(
            user_id, project_id=project_id, query_text=query_text,
            query_vector=query_vector, shown=baseline,
        )
        return MemoryInjection(
            memory=baseline,
            semantic_memory=semantic,
            mode="deterministic" if reason else "semantic",
            degraded_reason=reason,
            version=version,
            stable_prefix_hash=stable_hash(baseline),
        )

    async def recall(
        self,
        user_id: str,
        *,
        shown: Iterable[HasId],
        project_id: str | None = None,
        query_text: str | None = None,
        query_vector: Sequence[float] | None = None,
    ) -> tuple[list[tuple[Memory, float]], str | None]:
        """(memories nearest the query that are not in `shown`, degraded_reason or None).

        `shown` is what the prompt already holds: a chat turn passes the baseline
        pinned in its conversation's snapshot, not the current one, so a memory saved
        since the snapshot was taken still reaches the next turn."""
        hits, reason = await self._recall(user_id, project_id, query_text, query_vector)
        return self._semantic(hits, shown), reason

    def recall_near(self, user_id: str, vector: Sequence[float], *, shown: Iterable[HasId],
                    project_id: str | None) -> list[tuple[Memory, float]]:
        """`recall` for a chat turn that embedded its query already, in the worker thread
        it searches everything else from (degrading to no hits, logged, like `recall`)."""
        return self._semantic(self._nearest(user_id, project_id, vector)[0], shown)

    def _semantic(self, hits: list[tuple[Memory, float]], shown: Iterable[HasId]
                  ) -> list[tuple[Memory, float]]:
        settings = self.settings
        budget = Budget(settings.memory_semantic_max_items, settings.memory_semantic_max_tokens,
                        self._tokenizer)
        return select_semantic(hits, shown, budget)

    async def search(self, user_id: str, query: str, *, limit: int
                     ) -> tuple[list[tuple[Memory, float]], str | None]:
        """(up to `limit` memories nearest `query`, nearest first, degraded_reason or
        None): an agent's memory search, with no budget and nothing left out."""
        hits, reason = await self._recall(user_id, None, query, None)
        return hits[:limit], reason

    def _baseline(self, user_id: str, project_id: str | None) -> tuple[list[Memory], int]:
        version = self.store.version(user_id)
        with self._baselines_lock:
            cached = self._baselines.get((user_id, project_id, version))
            if cached is not None:
                self._baselines.move_to_end((user_id, project_id, version))
                return list(cached), version
        snapshot = self.store.snapshot(user_id, project_id)
        baseline = select_baseline(snapshot.memories, self._baseline_budget)
        with self._baselines_lock:
            self._baselines[(user_id, project_id, snapshot.version)] = tuple(baseline)
            while len(self._baselines) > BASELINE_CACHE_SIZE:
                self._baselines.popitem(last=False)
        return baseline, snapshot.version

    async def _embed_document(self, content: str) -> list[float] | None:
        """The content's vector, or None (logged) when it cannot be stored now."""
        db = self.store.db
        if not db.vector_state.ok:
            return None
        try:
            [vector] = await self.embedder.embed_documents([content])
        except EmbeddingError as exc:
            log.warning("memory saved without embedding (left for backfill): %s", exc)
            return None
        if len(vector) != db.embed_dim:
            log.warning("memory saved without embedding: %d-d vector for a %d-d index",
                        len(vector), db.embed_dim)
            return None
        return vector

    async def _recall(
        self, user_id: str, project_id: str | None, query_text: str | None,
        query_vector: Sequence[float] | None,
    ) -> tuple[list[tuple[Memory, float]], str | None]:
        """(hits, None), or ([], degraded_reason) after logging why and where."""
        text = (query_text or "").strip()[: self.settings.memory_query_max_chars]
        if not text and query_vector is None:
            # No query at all is the stable prefix asking for its baseline: not worth a
            # line per new conversation. A blank query from a client still is.
            level = logging.DEBUG if query_text is None else logging.INFO
            return _degraded(EMPTY_QUERY, "no query text", level=level)
        db = self.store.db
        state = db.vector_state
        if not state.ok:
            reason = DIMENSION_CONFLICT if state.conflict else VECTOR_STORE_UNAVAILABLE
            return _degraded(reason, state.detail)
        try:
            vector = query_vector if query_vector is not None else (
                await self.embedder.embed_query(text))
        except EmbeddingError as exc:
            return _degraded(EMBEDDINGS_UNAVAILABLE, str(exc))
        return await in_thread(self._nearest, user_id, project_id, vector)

    def _nearest(self, user_id: str, project_id: str | None, vector: Sequence[float]
                 ) -> tuple[list[tuple[Memory, float]], str | None]:
        """(the store's KNN hits, None), or ([], degraded_reason) when it cannot run."""
        db = self.store.db
        if len(vector) != db.embed_dim:
            return _degraded(DIMENSION_CONFLICT, f"query vector has {len(vector)} dimensions, "
                             f"the index {db.embed_dim}")
        try:
            hits = self.store.recall(user_id, vector, k=self.settings.memory_top_k,
                                     project_id=project_id)
        except VectorUnavailable as exc:
            return _degraded(VECTOR_STORE_UNAVAILABLE, str(exc))
        return hits, None


def _degraded(reason: str, detail: str, *, level: int = logging.WARNING
              ) -> tuple[list[tuple[Memory, float]], str]:
    log.log(level, "memory recall degraded (path: semantic -> baseline, reason: %s): %s",
            reason, detail)
    return [], reason
