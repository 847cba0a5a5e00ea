"""A turn of a stored conversation: save the question, prepare, relay, save the answer.

The answer is stored `pending` with the question (one commit: docs/chat.md, Benchmark)
and finished in place, so a process killed mid-answer leaves a mark (start-up turns it
`interrupted`); a turn that ends without an answer drops it. When the conversation is
deleted while the answer streams, nothing is written and the outcome says so
(`conversation_deleted`).

Saving the question claims the conversation (the store refuses a second turn with
TurnInProgress); saving the answer, or `close()` for a turn that ends without one,
frees it. The claim is this process's lease (`Sources.turn_lease`, kept by
TurnClaims): a process that dies mid-turn leaves a claim that lapses a lease later,
and none lasts past `hold_seconds`, longer than any live turn can run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import partial

import anyio

from chatsvc._settings import Settings
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.chat._gather import Sources
from chatsvc.chat._limits import Limits
from chatsvc.chat._prepare import HeadStart, Prepared, prepare
from chatsvc.chat._relay import SHUTDOWN, Outcome, Relay
from chatsvc.chat._stopwatch import Stopwatch
from chatsvc.chat._tool_loop import ToolEvent, ToolRunner
from chatsvc.facts import branched
from chatsvc.images import Image
from chatsvc.llm import LLM
from context import Message
from store import (
    AssistantReply,
    ChatMessage,
    Conversation,
    DatabaseBusy,
    NotFound,
    StoreError,
    User,
)
from store.clock import new_id

log = logging.getLogger("chatsvc.chat")

Begin = Callable[[], tuple[Conversation, ChatMessage]]

# The answer exists only in memory once streamed: outwait another writer's lock
# this long (retrying every SAVE_RETRY_SECONDS) rather than lose it.
SAVE_PATIENCE_SECONDS = 30.0
SAVE_RETRY_SECONDS = 0.1
HOLD_MARGIN_SECONDS = 30.0  # database reads and searches, which have no deadline of their own


def hold_seconds(settings: Settings) -> float:
    """The longest a turn's claim on its conversation lasts, however often it is
    renewed: its query embedding, the upstream answers (a first token within
    LLM_FIRST_TOKEN_TIMEOUT, then the reply's tokens, counted at one a second, the
    slowest a CPU model streams; a stalled one is cut by LLM_STALL_TIMEOUT), one send to
    a stuck client and the save. A streamed answer has no total deadline of its own."""
    answer = settings.llm_first_token_timeout_seconds + settings.reply_reserve_tokens
    rounds = 1 + (settings.tool_rounds if settings.tools != "off" else 0)
    return (settings.chat_embed_deadline_seconds + rounds * answer
            + settings.sse_send_timeout_seconds + SAVE_PATIENCE_SECONDS + HOLD_MARGIN_SECONDS)

DELETED = Outcome("error", "", error_code="conversation_deleted",
                  error_message="the conversation was deleted while it was being answered; "
                                "the answer was not stored")


def history_of(messages: list[ChatMessage], current_id: str,
               images: dict[str, tuple[dict, ...]] | None = None) -> list[Message]:
    """What the model saw and said before (with any kept per-message block and the
    images of a user message), no empties; an answer that used tools as its stored
    exchange, exactly as it was sent."""
    history, images = [], images or {}
    for m in messages:
        if m.tool_exchange:
            history.extend(_from_wire(entry) for entry in m.tool_exchange)
        elif m.id != current_id and m.content:
            history.append(Message(m.role, m.content, m.context or "",
                                   images=images.get(m.id, ())))
    return history


@dataclass(frozen=True)
class Stored:
    """A conversation as a turn reads it: its visible branch's messages and, when the
    model can see, the image parts of its user messages by message id."""

    messages: list[ChatMessage]
    images: dict[str, tuple[dict, ...]]

    @classmethod
    def read(cls, sources: Sources, user_id: str, conversation_id: str) -> Stored:
        messages = sources.chats.branch(user_id, conversation_id)
        seen = sources.settings.vision_enabled
        if not seen:
            return cls(messages, {})
        shown = {m.id for m in messages if m.role == "user"}
        return cls(messages, sources.images.parts(user_id, conversation_id, only=shown))


Started = tuple[Conversation, ChatMessage, Stored | None, list[str]]


def _start(sources: Sources, clock: Stopwatch, user_id: str, begin: Begin,
           branching: str | None, images: tuple[Image, ...] = ()) -> Started:
    """Store the question (`begin()`, with its images' rows), write its images' files
    once that committed, and read the conversation's visible branch in one
    worker-thread hop (under load each hop waits for a core, there and back). A turn
    that changes the branch of conversation `branching` forgets, in the same
    transaction, the facts left resting only on abandoned messages (chatsvc.facts).
    Messages None: the read failed, and `Turn.prepare` reads again, where a turn's
    failures are handled (the route reports them and frees the conversation the
    question claimed)."""
    chats, forgotten = sources.chats, []
    if branching is None:
        conversation, question = begin()
    else:
        (conversation, question), forgotten = branched(chats, sources.facts, user_id,
                                                       branching, begin)
    _save_files(sources, user_id, images)
    try:
        with clock("history"):
            return conversation, question, Stored.read(sources, user_id, conversation.id), \
                forgotten
    except Exception:
        return conversation, question, None, forgotten


def _save_files(sources: Sources, user_id: str, images: tuple[Image, ...]) -> None:
    """The files of the images whose rows were just committed: written after them, a
    file is never swept (ImageFiles.sweep) before its row can be seen, and a turn that
    could not start leaves none. One that fails to write is logged: the turn goes on,
    its text and the other images with it."""
    try:
        sources.images.save_files(user_id, images)
    except OSError:
        log.exception("could not write the image files of a message of user %s", user_id)


def _from_wire(entry: dict) -> Message:
    return Message(entry["role"], entry["content"], tool_calls=tuple(entry.get("tool_calls", ())),
                   tool_call_id=entry.get("tool_call_id", ""))


@dataclass
class Turn:
    sources: Sources
    llm: LLM
    user: User
    conversation: Conversation
    question: ChatMessage
    reply_id: str
    stored: Stored | None  # the visible branch, the question included
    prepared: Prepared | None = None
    relay: Relay | None = None
    timings: dict[str, float] = field(default_factory=dict)
    received_at: float = 0.0  # perf_counter when the handler took the request
    tools: ToolRunner | None = None  # the tools the server runs for the model, if any
    deleted: bool = False  # the conversation was deleted before the answer was saved
    stopping: tuple[str, str] | None = None  # why it was stopped early (Relay.stop)
    saved: bool = False  # the answer is stored (which freed the conversation)
    head_start: HeadStart | None = None  # the query's embedding, under way since the start
    forgotten: list[str] = field(default_factory=list)  # facts gone with an abandoned branch
    images: tuple[Image, ...] = ()  # the question's, sent with it

    def to_upstream(self) -> float | None:
        """Seconds from taking the request to starting the upstream call."""
        started = self.relay.started_at if self.relay else None
        return started - self.received_at if started is not None else None

    @classmethod
    async def start(
        cls, sources: Sources, llm: LLM, user: User, message: str, *,
        conversation_id: str | None, project_id: str | None, name: str | None = None,
        tools: ToolRunner | None = None, edit: bool = False, parent_id: str | None = None,
        images: tuple[Image, ...] = (),
    ) -> Turn:
        """Persist the user's message first: whatever fails later, it is not lost.
        `save_question` times the whole hop, which reads the history (`history`) too.
        An embedding service starts on the query meanwhile (`HeadStart`). `edit`: the
        message follows `parent_id` (store.chats.Chats.start_turn), a new branch. Its
        `images` are stored with it (`_save_files`)."""
        reply_id = new_id()
        begin = partial(
            sources.chats.start_turn, user.id, message, conversation_id=conversation_id,
            project_id=project_id, name=name, hold_seconds=hold_seconds(sources.settings),
            lease=sources.turn_lease, reply_id=reply_id, edit=edit, parent_id=parent_id,
            images=[image.stored() for image in images])
        return await cls._begin(sources, llm, user, reply_id, begin,
                                branching=conversation_id if edit else None, tools=tools,
                                head_start=HeadStart.when_free(sources, message),
                                images=images)

    @classmethod
    async def regenerate(cls, sources: Sources, llm: LLM, user: User, conversation_id: str, *,
                         tools: ToolRunner | None = None) -> Turn:
        """A new answer to the question of the visible branch's last answer, which stays
        as its sibling (store.branches). NotFound, TurnInProgress, NothingToRegenerate."""
        reply_id = new_id()
        begin = partial(sources.chats.start_regenerate, user.id, conversation_id,
                        reply_id=reply_id, hold_seconds=hold_seconds(sources.settings),
                        lease=sources.turn_lease)
        return await cls._begin(sources, llm, user, reply_id, begin, branching=conversation_id,
                                tools=tools)

    @classmethod
    async def _begin(cls, sources: Sources, llm: LLM, user: User, reply_id: str, begin: Begin,
                     *, branching: str | None, tools: ToolRunner | None,
                     head_start: HeadStart | None = None, images: tuple[Image, ...] = ()
                     ) -> Turn:
        received = time.perf_counter()
        timings: dict[str, float] = {}
        clock = Stopwatch(timings)
        try:
            with clock("save_question"):
                conversation, question, stored, forgotten = await in_thread_shielded(
                    _start, sources, clock, user.id, begin, branching, images)
        except BaseException:
            if head_start is not None:
                head_start.drop()
            raise
        return cls(sources, llm, user, conversation, question, reply_id, stored,
                   timings=timings, received_at=received, tools=tools, head_start=head_start,
                   forgotten=forgotten, images=images)

    async def prepare(self, *, streaming: bool = True) -> Prepared:
        """The prompt, and the relay of its answer (which streams or not: Limits)."""
        if self.stored is None:
            self.stored = await in_thread(Stored.read, self.sources, self.user.id,
                                          self.conversation.id)
        self.prepared = await prepare(
            self.sources, self.user, conversation=self.conversation,
            history=history_of(self.stored.messages, self.question.id, self.stored.images),
            current=self.question.content, project_id=self.conversation.project_id,
            head_start=self.head_start, images=self._question_images(),
        )
        settings = self.sources.settings
        self.relay = Relay(
            self.llm, self.prepared.assembly.messages,
            limits=Limits.of(settings, streaming=streaming), on_finish=self._save,
            mode=self.prepared.mode, received_at=self.received_at,
            options={"max_tokens": settings.llm_max_tokens} if settings.llm_max_tokens else None,
            tools=self.tools,
        )
        if self.stopping:
            self.relay.stop(self.stopping)
        self.prepared.timings.update(self.timings)
        return self.prepared

    def _question_images(self) -> tuple[dict, ...]:
        """The question's image parts: the request's, or for a regenerated answer the
        stored ones of its question (when the model can see)."""
        if self.images:
            return tuple(image.part() for image in self.images)
        return self.stored.images.get(self.question.id, ())

    async def deltas(self) -> AsyncIterator[list[str] | ToolEvent]:
        """The answer's text pieces, several at once when they arrived together, and
        the progress of the tools it runs."""
        async with aclosing(self.relay.events()) as events:
            async for pieces in events:
                for piece in pieces:
                    if isinstance(piece, ToolEvent):
                        yield piece
                if texts := [piece for piece in pieces if isinstance(piece, str)]:
                    yield texts

    def stop(self, reason: tuple[str, str] = SHUTDOWN) -> None:
        """The server shuts down, or a user asked to stop: end the answer now (see
        Relay.stop)."""
        self.stopping = self.stopping or reason
        if self.relay is not None:
            self.relay.stop(self.stopping)

    async def close(self) -> None:
        """Free the conversation if the turn ends without a stored answer (it could not
        be prepared, or its stream never ran), and drop its empty `pending` row."""
        if self.head_start is not None:
            self.head_start.drop()
        if self.saved:
            return
        try:
            await in_thread_shielded(self.sources.chats.end_turn, self.user.id,
                                     self.conversation.id, self.question.id)
        except StoreError as exc:  # the claim lapses on its own
            log.warning("could not free conversation %s: %s", self.conversation.id, exc)

    @property
    def outcome(self) -> Outcome | None:
        if self.deleted:
            return DELETED
        return self.relay.outcome if self.relay else None

    async def _save(self, outcome: Outcome) -> None:
        usage = outcome.usage.as_json() if outcome.usage else None
        reply = AssistantReply(
            id=self.reply_id, content=outcome.content, status=outcome.status,
            mode=self.prepared.mode, prefix_hash=self.prepared.assembly.prefix_hash,
            usage={**usage, "finish_reason": outcome.finish_reason, "model": self.llm.model}
            if usage else None,
            cached_tokens=outcome.usage.cached_tokens if outcome.usage else None,
            question_id=self.question.id,
            question_context=self.prepared.assembly.retained_context or None,
            tool_exchange=outcome.exchange or None,
        )
        try:
            await self._patiently(self.sources.chats.finish_turn, self.user.id,
                                  self.conversation.id, reply)
            self.saved = True
            self.sources.recall.index_soon()  # the question and its answer
        except NotFound:
            log.info("conversation %s was deleted while answering; reply %s not stored",
                     self.conversation.id, reply.id)
            self.deleted = True

    async def _patiently(self, write, *args) -> None:
        """`write(*args)` in a thread, finished even if the client goes away; a lock
        another writer holds is outwaited (the answer exists nowhere else)."""
        deadline = anyio.current_time() + SAVE_PATIENCE_SECONDS
        while True:
            try:
                await in_thread_shielded(write, *args)
                return
            except DatabaseBusy:
                if anyio.current_time() > deadline:
                    raise
                log.warning("database busy, retrying to save reply %s", self.reply_id)
                await anyio.sleep(SAVE_RETRY_SECONDS)
