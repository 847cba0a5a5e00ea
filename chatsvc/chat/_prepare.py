"""Build the upstream prompt of one turn: pinned stable layers + one query's RAG layers.

Semantic search failing in any way (embeddings down, breaker open, sqlite-vec
missing, dimension CONFLICT, an unexpected exception) never fails the turn: the
per-message block becomes the most recent published posts (`mode: fallback`)
and the stable prefix stays exactly the same.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import anyio

from chatsvc import metrics
from chatsvc._errors import EmbeddingError, VectorUnavailable
from chatsvc._threads import in_thread_shielded
from chatsvc._zones import in_user_zone
from chatsvc.chat._gather import Sources
from chatsvc.chat._stopwatch import Stopwatch
from context import Assembly, Budgets, Dynamic, Message, Snapshot, assemble, pinned
from context.render import excerpt_text
from context.tokens import get_tokenizer
from store import User
from store.chats import Conversation

log = logging.getLogger("chatsvc.chat")

QUERY_CHARS = 4000  # embedding input cap for the current message


@dataclass(frozen=True)
class Prepared:
    assembly: Assembly
    mode: str  # "rag" | "fallback"
    degraded_reason: str | None
    sources: list[dict]
    timings: dict[str, float] = field(default_factory=dict)  # seconds


def user_today(timezone: str, now: datetime) -> date:
    """The date in the user's timezone (an unknown zone counts as UTC)."""
    return in_user_zone(now, timezone).date()


async def stable_snapshot(
    sources: Sources, user: User, conversation: Conversation | None,
    project_id: str | None, now: datetime,
) -> Snapshot:
    """The conversation's pinned snapshot while fresh, else a new one (stored)."""
    ttl = sources.settings.snapshot_ttl_seconds
    kept = pinned(conversation.snapshot, now, ttl) if conversation else None
    if kept is not None:
        return kept
    sheet_id, sheet = await sources.fact_sheet(user.id)
    snapshot = Snapshot(
        taken_at=now,
        fact_sheet_id=sheet_id,
        fact_sheet=tuple(sheet),
        recent_conversations=tuple(
            await sources.recent_conversations(user.id, conversation)
        ),
        memory=tuple(await sources.baseline_memory(user.id, project_id)),
        docs=tuple(await sources.pinned_docs(user.id, project_id)),
    )
    if conversation is not None:
        await in_thread_shielded(
            sources.chats.set_snapshot, user.id, conversation.id, snapshot.to_json()
        )
    return snapshot


def _rag_sources(dynamic: Dynamic) -> list[dict]:
    return (
        [{"type": "fact", "id": f.id, "distance": f.distance, "layer": "message"}
         for f in dynamic.facts]
        + [{"type": "memory", "id": m.id, "distance": m.distance, "layer": "message"}
           for m in dynamic.memories]
        + [{"type": "chunk", "id": s.id, "title": s.title, "score": s.score, "layer": "message"}
           for s in dynamic.snippets]
    )


def _recalled_sources(assembly: Assembly) -> list[dict]:
    """The earlier messages the block shows (not all that were found: the block leaves
    out what the prompt shows already and what its budget cannot hold)."""
    return [{"type": "message", "id": e.id, "conversation_id": e.conversation_id,
             "speaker": e.speaker, "created_at": e.created_at, "text": excerpt_text(e.text),
             "score": e.score, "layer": "message"} for e in assembly.excerpts]


def _stable_sources(snapshot: Snapshot, assembly: Assembly) -> list[dict]:
    """The fact sheet entries, memories and pinned documents the stable prefix shows: the
    answer could draw on them too, though no search found them for this message."""
    return (
        [{"type": "fact", "id": f.id, "fact_sheet_id": snapshot.fact_sheet_id, "layer": "stable"}
         for f in assembly.stable_facts]
        + [{"type": "memory", "id": m.id, "layer": "stable"} for m in assembly.stable_memory]
        + [{"type": "doc", "id": d.id, "title": d.title, "tier": d.tier, "layer": "stable"}
           for d in assembly.stable_docs]
    )


async def _fallback(sources: Sources, cause: str, reason: str) -> tuple[Dynamic, str, list[dict]]:
    log.warning("chat turn in fallback mode: %s", reason)
    metrics.fallback(cause)
    posts = await sources.recent_posts()
    cited = [{"type": "post", "id": p.id, "title": p.title, "layer": "message"} for p in posts]
    return Dynamic(posts=tuple(posts)), reason, cited


async def embed_query(sources: Sources, query: str) -> list[float]:
    """The query's vector within the turn's embedding deadline: a slow embedding
    service retried to the end would hold the answer for minutes (4 x 30 s by default)."""
    deadline = sources.settings.chat_embed_deadline_seconds
    try:
        with anyio.fail_after(deadline):
            return await sources.embedder.embed_query(query[:QUERY_CHARS])
    except TimeoutError:
        raise EmbeddingError(f"no query embedding within {deadline:g} s "
                             "(CHATSVC_CHAT_EMBED_DEADLINE)") from None


class HeadStart:
    """A turn's query embedding, started as the turn starts when it leaves cores free (a
    service: Ollama, an OpenAI-compatible API; the bundled model on a short query, which
    it embeds on one core): storing the question, the stable layers and the keyword
    halves of the searches then cost no time beside the wait for it. The bundled model
    on a long query gets none: it takes every core, and beside the store's work both
    were slower on 2 cores (docs/chat.md, Benchmark)."""

    def __init__(self, sources: Sources, query: str) -> None:
        self.seconds = 0.0  # the embedding's own time, whatever overlapped it
        self._started = time.perf_counter()
        self._task = asyncio.create_task(self._embed(sources, query))

    @classmethod
    def when_free(cls, sources: Sources, query: str, *, beside_write: bool = False
                  ) -> HeadStart | None:
        """`beside_write`: the turn's only work before the searches is one small write
        (a stored /v1 question, ~1 ms in a worker thread), which runs beside the
        in-process model on every core too: a stored /v1 turn cost +3.5-4 ms p50 over an
        unstored one with it, +8-17 ms without (docs/evals.md, Storing /v1 exchanges)."""
        if not sources.db.vector_state.ok or (
                sources.embedder.shares_cores(query[:QUERY_CHARS]) and not beside_write):
            return None
        return cls(sources, query)

    async def _embed(self, sources: Sources, query: str) -> list[float]:
        try:
            return await embed_query(sources, query)
        finally:
            self.seconds = time.perf_counter() - self._started

    async def vector(self) -> list[float]:
        return await self._task

    @property
    def running(self) -> bool:
        """Still waiting for the service (an open breaker fails it in microseconds)."""
        return not self._task.done()

    def drop(self) -> None:
        """The turn ends without using it: stop the call, and take any error it ended
        with (an error never taken is logged as lost when the task is freed)."""
        if not self._task.done():
            self._task.cancel()
        elif not self._task.cancelled():
            self._task.exception()


async def _query_vector(
    sources: Sources, query: str, head_start: HeadStart | None, clock: Stopwatch
) -> list[float]:
    """`embed` is the embedding's own time, from its head start if it had one."""
    if head_start is None:
        with clock("embed"):
            return await embed_query(sources, query)
    try:
        return await head_start.vector()
    finally:
        clock.timings["embed"] = head_start.seconds


async def dynamic_layers(
    sources: Sources, user: User, project_id: str | None, query: str, snapshot: Snapshot,
    timings: dict[str, float], head_start: HeadStart | None = None,
    asked_at: datetime | None = None,
) -> tuple[Dynamic, str | None, list[dict]]:
    """(layers, degraded_reason or None, sources) for the current message; recall leaves
    out the memories and whole documents the `snapshot` pinned in the stable prefix.
    `head_start`: the query's embedding, already under way; the searches' keyword halves
    are then taken while it runs. `asked_at`: the turn's time in the user's zone."""
    state = sources.db.vector_state
    if not state.ok:
        return await _fallback(sources, "vector_store",
                               f"vector store unavailable: {state.detail}")
    clock = Stopwatch(timings)
    try:
        ahead = None
        # Only while there is a wait to fill: a failed embedding makes this turn a
        # fallback, and a finished one leaves the keywords to the one search hop.
        if head_start is not None and head_start.running:
            with clock("keywords"):
                ahead = await sources.keywords_ahead(user.id, query, snapshot)
        vector = await _query_vector(sources, query, head_start, clock)
        with clock("search"):
            dynamic = await sources.searches(user.id, project_id, query, vector, snapshot,
                                             clock, ahead, asked_at)
    except EmbeddingError as exc:
        return await _fallback(sources, "embeddings", f"embeddings unavailable: {exc}")
    except VectorUnavailable as exc:
        return await _fallback(sources, "vector_store",
                               f"vector store unavailable: {exc.reason}")
    except Exception as exc:  # RAG failure never breaks a chat
        log.exception("semantic search failed")
        return await _fallback(sources, "search",
                               f"semantic search failed: {type(exc).__name__}")
    return dynamic, None, _rag_sources(dynamic)


async def prepare(
    sources: Sources, user: User, *, conversation: Conversation | None,
    history: Sequence[Message], current: str, project_id: str | None = None,
    now: datetime | None = None, after: Sequence[Message] = (),
    head_start: HeadStart | None = None, images: Sequence[dict] = (),
) -> Prepared:
    """`images`: the current message's image parts (OpenAI's), sent with it alone."""
    timings: dict[str, float] = {}
    clock = Stopwatch(timings)
    started = time.perf_counter()
    now = now or datetime.now(UTC)
    local_now = in_user_zone(now, user.timezone)
    settings = sources.settings
    with clock("stable"):
        snapshot = await stable_snapshot(sources, user, conversation, project_id, now)
    dynamic, reason, cited = await dynamic_layers(sources, user, project_id, current, snapshot,
                                                   timings, head_start, local_now)
    with clock("assemble"):
        assembly = assemble(
            snapshot=snapshot,
            today=local_now.date(),
            timezone=user.timezone,
            dynamic=dynamic,
            history=history,
            current=current,
            after=after,
            images=images,
            strategy=settings.context_strategy,
            budgets=Budgets(history=settings.history_tokens,
                            message_context=settings.context_tokens,
                            docs=settings.docs_tokens,
                            prompt=settings.prompt_ceiling,
                            tokenizer=get_tokenizer(settings.tokenizer)),
        )
    timings["prepare"] = time.perf_counter() - started
    mode = "fallback" if reason else "rag"
    log.debug("turn prepared in %.1f ms (embedding %.1f ms), mode %s, %d prompt tokens",
              timings["prepare"] * 1000, timings.get("embed", 0.0) * 1000, mode,
              assembly.tokens["total"])
    cited = [*cited, *_recalled_sources(assembly), *_stable_sources(snapshot, assembly)]
    return Prepared(assembly, mode, reason, cited, timings)
