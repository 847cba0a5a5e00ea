"""The fact extraction job: per user, pending messages -> LLM -> facts -> fact sheet.

Batches are per conversation, oldest first, each request within the token cap.
A malformed answer gets one repair retry; a second one, or an upstream error,
skips the batch with a log line and leaves its messages unprocessed for the next
run. Runs for one user never overlap: in this process an asyncio lock, across
replicas the database's per-user job lock (a run finding it taken skips the user);
should both be bypassed, the processed mark still decides (see `store.extraction`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime

from chatsvc._errors import UpstreamError
from chatsvc._joblock import job_lock
from chatsvc._settings import Settings
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.extraction import _apply
from chatsvc.extraction._grounding import check, rejected_counts
from chatsvc.extraction._prompt import (
    REPLY_SCHEMA,
    Extraction,
    Request,
    build_request,
    parse_reply,
    repair_chat,
    repair_overhead,
)
from chatsvc.fact_sheet import (
    DROP_SCHEMA,
    SheetEntry,
    build_entries,
    dedup_prompt,
    parse_drops,
    save_entries,
    within_cap,
)
from chatsvc.facts import FactService
from chatsvc.llm import LLM, MalformedReply
from chatsvc.metrics import FACTS_REJECTED, FACTS_STORED
from context.tokens import get_tokenizer
from store import Database, ExtractionQueueStore, FactSheetStore, UserStore
from store.clock import utc_now
from store.extraction import AlreadyProcessed, PendingMessage
from store.fact_sheets import FactSheet

log = logging.getLogger("chatsvc.extraction")

PENDING_PER_RUN = 2000  # messages looked at per user and run; the rest waits


@dataclass
class ExtractionResult:
    new_facts: int = 0
    referenced: int = 0
    superseded: int = 0
    forgotten: int = 0
    # Proposed facts not stored, by reason (every reason, zero included).
    rejected: dict[str, int] = field(default_factory=lambda: rejected_counts(Counter()))
    fact_sheet_id: str | None = None
    processed_messages: int = 0
    failed_batches: int = 0
    errors: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return asdict(self)

    def count_rejected(self, counter: Counter) -> None:
        for reason, n in counter.items():
            self.rejected[reason] += n
            FACTS_REJECTED.labels(reason).inc(n)


class SkipBatch(Exception):
    """This batch cannot be extracted now; its messages stay unprocessed."""


class UpstreamDown(SkipBatch):
    """The LLM failed: the user's other conversations would fail too, stop the run."""


class FactExtractor:
    """Extraction runs over the stores it is given (facts through `fact_service`, which
    also embeds new facts; `db` for the batch transaction and the job lock)."""

    def __init__(
        self,
        settings: Settings,
        llm: LLM,
        fact_service: FactService,
        *,
        db: Database,
        sheets: FactSheetStore,
        queue: ExtractionQueueStore,
        users: UserStore,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.llm = llm
        self.fact_service = fact_service
        self.facts = fact_service.store
        self.db = db
        self.sheets = sheets
        self.queue = queue
        self.users = users
        self.clock = clock
        self.tokenizer = get_tokenizer(settings.tokenizer)
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def run_all(self) -> dict[str, ExtractionResult]:
        """One run for every user with unprocessed messages, one user at a time."""
        results = {}
        for user_id in await in_thread(self.queue.users_with_pending):
            try:
                results[user_id] = await self.run_user(user_id)
            except Exception:  # one user's broken data must not starve the others
                log.exception("fact extraction failed for user %s", user_id)
        return results

    async def run_user(self, user_id: str) -> ExtractionResult:
        async with self._locks[user_id], job_lock(
            self.db, "fact_extraction", user_id, wait=False
        ) as held:
            result = ExtractionResult()
            if not held:  # another replica is extracting this user's facts right now
                log.info("fact extraction: user %s is being processed elsewhere", user_id)
                result.errors.append("skipped: another instance is extracting for this user")
                return result
            pending = await in_thread(self.queue.pending, user_id, limit=PENDING_PER_RUN)
            conversations: dict[str, list[PendingMessage]] = defaultdict(list)
            for message in pending:
                conversations[message.conversation_id].append(message)
            for messages in conversations.values():
                try:
                    await self._conversation(user_id, messages, result)
                except SkipBatch as exc:
                    result.failed_batches += 1
                    result.errors.append(str(exc))
                    if isinstance(exc, UpstreamDown):
                        break
            if result.processed_messages:
                result.fact_sheet_id = (await self.regenerate_sheet(user_id)).id
            return result

    async def regenerate_sheet(self, user_id: str) -> FactSheet:
        """A new fact sheet for the user, AI-deduplicated when that is switched on."""
        now = self.clock()
        entries = await in_thread(build_entries, self.sheets, user_id, now=now)
        dropped = await self._dedup(entries, user_id) if self.settings.fact_sheet_ai_dedup else None
        if dropped:
            entries = await in_thread(build_entries, self.sheets, user_id, now=now,
                                      exclude=frozenset(dropped))
        return await in_thread(save_entries, self.sheets, user_id, entries, now=now,
                               dedup_log=dropped)

    async def _dedup(self, entries: list[SheetEntry], user_id: str) -> list[str] | None:
        """Fact ids the LLM drops, or None when dedup was skipped (cost cap, failure)."""
        prompt, refs = dedup_prompt(entries)
        if not within_cap(prompt, self.settings.fact_sheet_dedup_max_tokens, self.tokenizer):
            log.info("fact sheet dedup skipped for user %s: over the token cap", user_id)
            return None
        try:
            reply = await self._complete([{"role": "user", "content": prompt}], user_id,
                                         schema=DROP_SCHEMA)
            return parse_drops(reply, refs)
        except (SkipBatch, MalformedReply) as exc:
            log.warning("fact sheet dedup skipped for user %s: %s", user_id, exc)
            return None

    async def _conversation(
        self, user_id: str, messages: list[PendingMessage], result: ExtractionResult
    ) -> None:
        budget = (self.settings.extract_max_input_tokens - self.settings.extract_max_output_tokens
                  - repair_overhead(self.tokenizer))
        # The user's own name may stand in a fact the user's words say as "I".
        name = (await in_thread(self.users.get, user_id)).name
        ignore_words = frozenset(name.casefold().split())
        while messages:
            known = await in_thread(_apply.known_facts, self.facts, self.sheets, user_id,
                                    now=self.clock())
            request = build_request(known, messages, budget=budget,
                                    tokenizer=self.tokenizer)
            log.debug("fact extraction: user %s, %d messages, %d input tokens", user_id,
                      len(request.messages), request.tokens)
            extraction = await self._ask(request, {k.ref for k in known}, user_id)
            checked = check(extraction, request, ignore_words=ignore_words)
            vectors = await self.fact_service.vectors([g.fact for g in checked.facts])
            try:
                applied = await in_thread_shielded(
                    _apply.apply, self.db, self.facts, self.queue, user_id=user_id,
                    messages=request.messages, known=known, extraction=extraction,
                    checked=checked, vectors=vectors, now=self.clock(),
                    duplicate_distance=self.settings.fact_duplicate_distance,
                )
            except AlreadyProcessed:
                log.info("fact extraction: user %s batch already processed elsewhere", user_id)
                return
            result.new_facts += len(applied.created)
            for fact in applied.created:
                FACTS_STORED.labels(fact.category).inc()
            result.referenced += applied.referenced
            result.superseded += applied.superseded
            result.forgotten += applied.forgotten
            result.count_rejected(checked.rejected)
            result.processed_messages += len(request.messages)
            if None in vectors:  # the embedder failed: left for backfill if this fails too
                await self.fact_service.index(applied.created)
            messages = messages[len(request.messages):]

    async def _ask(self, request: Request, refs: set[str], user_id: str) -> Extraction:
        first = await self._complete(request.chat, user_id, schema=REPLY_SCHEMA)
        try:
            return parse_reply(first, refs)
        except MalformedReply as exc:
            error = str(exc)
        second = await self._complete(repair_chat(request, first, error), user_id,
                                      schema=REPLY_SCHEMA)
        try:
            return parse_reply(second, refs)
        except MalformedReply as exc:
            log.warning("fact extraction: skipped %d messages of user %s: malformed JSON "
                        "after one repair (%s)", len(request.messages), user_id, exc)
            raise SkipBatch(f"malformed JSON from the LLM after one repair: {exc}") from None

    async def _complete(self, chat: list[dict[str, str]], user_id: str, *, schema: dict) -> str:
        """The answer, JSON as CHATSVC_EXTRACT_JSON_MODE asks for it (`schema` its shape)."""
        try:
            return await self.llm.complete(
                chat, temperature=0, max_tokens=self.settings.extract_max_output_tokens,
                json_mode=self.settings.extract_json_mode, schema=schema,
            )
        except UpstreamError as exc:
            log.warning("fact extraction: LLM failed for user %s: %s", user_id, exc)
            # The client's error type, never its body: the result goes back to the user.
            kind = type(exc.__cause__ or exc).__name__
            raise UpstreamDown(f"LLM request failed: {kind}") from None
