"""Start-up warm-up: load, in the background, what the first chat turn would load.

Without it the first turn after a start pays for the tokenizer, the embedding model
and every in-memory index it searches (0.5-1.8 s against ~30 ms for the second,
issue 23). The warm-up runs the turn's own read path (`Sources`: the same store
entry points a turn calls, so however an index loads or refreshes, it is loaded the
same way) for the shared knowledge index and for the users active lately, and opens
the upstream LLM client's first connection (openai's first request costs ~0.5 s; the
bundled local model must also answer one token, so that `warm` means it computes). It
never blocks start-up or `/health`, and a step that fails is reported there, never
raised: the turn that needs it loads it (or falls back) as it would without a warm-up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from datetime import timedelta

import anyio

from chatsvc._health import Check
from chatsvc._settings import Settings
from chatsvc._threads import in_thread
from chatsvc.chat import Sources
from chatsvc.llm import LLM
from context.tokens import get_tokenizer
from store import ChatStore
from store.clock import utc_now

log = logging.getLogger("chatsvc.warmup")

WARM_QUERY = "warm-up"
# An upstream that does not answer (a host that drops packets) holds `warm` this long at
# most, not LLM_TIMEOUT.
LLM_CONNECT_SECONDS = 5.0
# The bundled model's one-token answer: its self-test's took 14 s (Gemma 270M) at a load
# average of 30 on the project's 2-core machine.
LOCAL_COMPLETION_SECONDS = 60.0


class Warmup:
    """One warm-up run at a time (`run`), and what it has done so far (`check`)."""

    def __init__(self, settings: Settings, sources: Sources, chats: ChatStore, llm: LLM
                 ) -> None:
        self.settings = settings
        self.sources = sources
        self.chats = chats
        self.llm = llm
        self.state = "idle"  # idle (not started) -> warming -> warm (ended)
        self.done: list[str] = []
        self.failed: dict[str, str] = {}
        self.unreached = ""  # why the upstream did not answer: its own check reports it
        self.users = 0
        self.seconds = 0.0

    @property
    def warm(self) -> bool:
        return self.state == "warm"

    async def run(self) -> None:
        """Every step in turn; a failed step is recorded and the next one runs."""
        started = time.perf_counter()
        self.state, self.done, self.failed, self.users, self.unreached = "warming", [], {}, 0, ""
        tokenizer = get_tokenizer(self.settings.tokenizer)
        await self._step("tokenizer", in_thread(tokenizer.count, WARM_QUERY))
        vector = await self._step("embeddings", self._embed())
        if vector is None:  # loading an index does not depend on the query: search anyway
            vector = [1.0] + [0.0] * (self.sources.embedder.dim - 1)
        state = self.sources.db.vector_state
        if state.ok:
            await self._step("knowledge", in_thread(
                self.sources.knowledge_snippets, "", WARM_QUERY, vector, ()))
            await self._step("recent users", self._users(vector))
        else:
            self.failed["indexes"] = f"vector store unavailable: {state.detail}"
        await self._connect()
        self.seconds = time.perf_counter() - started
        self.state = "warm"
        log.info("%s", self.check().detail)

    async def _step(self, name: str, work: Awaitable):
        try:
            result = await work
        except Exception as exc:  # reported by /health; the turn that needs it retries
            log.warning("warm-up step %s failed: %s: %s", name, type(exc).__name__, exc)
            self.failed[name] = f"{type(exc).__name__}: {exc}"
            return None
        self.done.append(name)
        return result

    async def _connect(self) -> None:
        """The upstream client and its first connection; an upstream that does not answer
        fails `/health`'s `llm` check, not this one."""
        try:
            with anyio.fail_after(LLM_CONNECT_SECONDS):
                await self.llm.connect()
        except Exception as exc:  # the first turn connects (or reports) by itself
            self.unreached = type(exc).__name__
            return
        self.done.append("llm connection")
        if self.settings.llm_is_bundled:
            await self._step("llm completion", self._complete())

    async def _complete(self) -> None:
        """The bundled model answers one tiny completion before the service is `warm`:
        a model that cannot compute on this machine fails here, not on a user's turn.
        Never sent to a hosted upstream (it would be billed)."""
        with anyio.fail_after(LOCAL_COMPLETION_SECONDS):
            await self.llm.complete([{"role": "user", "content": WARM_QUERY}], max_tokens=1)

    async def _embed(self) -> list[float]:
        """The query embedding a turn would make (the local model loads here), within the
        turn's own deadline: an embedding service that is down costs no longer."""
        with anyio.fail_after(self.settings.chat_embed_deadline_seconds):
            return await self.sources.embedder.embed_query(WARM_QUERY)

    async def _users(self, vector: list[float]) -> None:
        """The per-user indexes (facts, memories, knowledge, messages) of the users with a
        turn in the last CHATSVC_WARMUP_DAYS, the most recent first."""
        settings = self.settings
        if not settings.warmup_users:
            return
        since = utc_now() - timedelta(days=settings.warmup_days)
        users = await in_thread(self.chats.active_users, since=since,
                                limit=settings.warmup_users)
        for user_id in users:
            await in_thread(self._user_indexes, user_id, vector)
            self.users += 1

    def _user_indexes(self, user_id: str, vector: list[float]) -> None:
        """One user's four searches, as a turn runs them (one worker thread)."""
        sources = self.sources
        sources.related_facts(user_id, vector)
        sources.semantic_memory(user_id, None, vector, ())
        sources.knowledge_snippets(user_id, WARM_QUERY, vector, ())
        sources.earlier_messages(user_id, WARM_QUERY, vector)

    def check(self) -> Check:
        """`/health`'s `warm` check: fails only when a step failed."""
        if self.state == "idle":
            return Check(True, "not started")
        loaded = ", ".join(self.done) or "nothing yet"
        if self.state == "warming":
            return Check(True, f"warming up (loaded: {loaded})")
        detail = f"warm-up ended in {self.seconds:.2f} s (loaded: {loaded}; {self.users} users)"
        if self.unreached:
            detail += f"; the LLM upstream did not answer ({self.unreached})"
        if not self.failed:
            return Check(True, detail)
        failed = "; ".join(f"{name}: {why}" for name, why in self.failed.items())
        return Check(False, f"{detail}; failed: {failed}",
                     "see the log: a turn loads what failed when it needs it")
