"""POST /api/chat (SSE or JSON) and POST /api/conversations/{id}/regenerate.

Every event of a streamed turn carries an SSE id (from 1 within the turn) and is
recorded (chatsvc.chat.Journal), so a client re-attaches on any worker or replica
(chat_stream.py). A resumable turn runs detached from its request (Detached): the
client may go away and the answer is still finished and stored; any other turn is
cancelled, upstream included, when its client goes away.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, suppress
from dataclasses import dataclass
from typing import Any

import anyio
from litestar import Request, Response, Router, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody
from litestar.types import ASGIApp
from sse_starlette import ServerSentEvent

from chatsvc._admission import Slot, StreamSlots
from chatsvc._errors_http import error_response
from chatsvc._settings import Settings
from chatsvc.chat import (
    DELETED,
    Detached,
    Journal,
    Outcome,
    Sources,
    ToolEvent,
    ToolRunner,
    Turn,
)
from chatsvc.extraction import FactExtractor
from chatsvc.llm import LLM
from chatsvc.routes import _images
from chatsvc.routes import _validate as check
from chatsvc.routes._idle_ping import IdlePingResponse
from chatsvc.routes._openapi import StreamingOperation
from context import message_limit
from context.budget import tokens
from context.tokens import get_tokenizer
from store import NotFound, TurnEventStore, User
from store.branches import NotAnAnswer, NothingToRegenerate

log = logging.getLogger("chatsvc.chat")

MAX_PROJECT_ID = 200
MAX_NAME = 100
ROOT = "root"  # parent_id of an edited first message

# How long a stream may take, once the server shuts down, to send its `error` event
# and save the partial answer before it is cut (the upstream closes within 1 s).
SHUTDOWN_GRACE_SECONDS = 5.0


@dataclass
class ChatRequest:
    message: str
    conversation_id: str | None = None
    stream: bool = True
    project_id: str | None = None
    name: str | None = None  # who speaks (OpenAI's field), kept with the message
    resumable: bool | None = None  # None: CHATSVC_RESUMABLE
    # Edit: the answer the message follows, a new branch from it ("root": none).
    parent_id: str | None = None
    # OpenAI's image_url objects, {"url", "detail"?}; checked as sent (a list type would
    # be converted leniently: an object passes as the list of its keys).
    images: Any = None


def check_message(text: str, settings: Settings, field: str = "message") -> str:
    if not text.strip():
        raise check.bad(field, "must not be empty")
    if len(text) > settings.max_message_chars:
        raise check.bad(field, f"longer than {settings.max_message_chars} characters")
    return _check_window(check.plain(field, text), settings, field)


def _check_window(text: str, settings: Settings, field: str) -> str:
    """`text` unless the model's window (LLM_CONTEXT_TOKENS) cannot hold it with an
    answer: refused before anything is stored or sent."""
    if settings.prompt_ceiling is None:
        return text
    tokenizer = get_tokenizer(settings.tokenizer)
    limit = message_limit(settings.prompt_ceiling, tokenizer)
    if (count := tokens(text, tokenizer)) > limit:
        raise check.bad(field, (
            f"{count} tokens, more than the {limit} a message can take: "
            f"LLM_CONTEXT_TOKENS={settings.llm_context_tokens} less "
            f"{settings.reply_reserve_tokens} for the answer and the system prompt"))
    return text


def numbered(journal: Journal, event: str, payload: dict) -> ServerSentEvent:
    """An event of a turn: numbered (its SSE id) and recorded by the turn's journal."""
    data = json.dumps(payload, ensure_ascii=False)
    return ServerSentEvent(id=str(journal.add(event, data)), event=event, data=data)


def joined(events: list[ServerSentEvent]) -> bytes:
    """Several events as one body chunk: one write to the client instead of one each."""
    return b"".join(event.encode() for event in events)


def event_stream(settings: Settings, events: AsyncIterator[ServerSentEvent | bytes],
                 on_shutdown: Callable[[], None],
                 beside: Callable[[], Awaitable[None]] | None = None) -> IdlePingResponse:
    """The SSE response; `on_shutdown` is called when the server starts shutting down,
    so that `events` can end with a last event rather than be cut; `beside()` runs
    while the response streams (a journal's watch). A `: ping` comment goes out after
    CHATSVC_SSE_PING seconds without an event (IdlePingResponse). sse-starlette adds
    `Cache-Control: no-store` and `X-Accel-Buffering: no`, so that proxies pass each
    event on at once (docs/deploy.md; test_sse_headers.py checks)."""
    shutdown = anyio.Event()

    async def forward_shutdown() -> None:
        if beside is not None:
            async with anyio.create_task_group() as group:
                group.start_soon(beside)
                await shutdown.wait()
                on_shutdown()
        else:
            await shutdown.wait()
            on_shutdown()

    return IdlePingResponse(
        events,
        ping=settings.sse_ping_seconds,
        ping_message_factory=lambda: ServerSentEvent(comment="ping"),
        send_timeout=settings.sse_send_timeout_seconds,
        shutdown_event=shutdown, shutdown_grace_period=SHUTDOWN_GRACE_SECONDS,
        data_sender_callable=forward_shutdown,
    )


def _meta(turn: Turn) -> dict:
    prepared = turn.prepared
    return {
        "conversation_id": turn.conversation.id, "message_id": turn.reply_id,
        "mode": prepared.mode, "degraded_reason": prepared.degraded_reason,
        "prefix_hash": prepared.assembly.prefix_hash, "sources": prepared.sources,
    }


def server_timing(turn: Turn) -> dict[str, str]:
    """A Server-Timing header: where the turn's time went before the upstream call (ms)."""
    timings = {**turn.prepared.timings, "to_upstream": turn.to_upstream()}
    parts = [f"{name};dur={seconds * 1000:.2f}" for name, seconds in timings.items()]
    return {"Server-Timing": ", ".join(parts)}


def _error(outcome: Outcome) -> dict:
    return {"code": outcome.error_code, "message": outcome.error_message}


async def _chat_events(turn: Turn, journal: Journal) -> AsyncIterator[ServerSentEvent | bytes]:
    def say(event: str, payload: dict) -> ServerSentEvent:
        return numbered(journal, event, payload)

    try:
        await turn.prepare()
    except NotFound:  # deleted since the question was saved
        yield say("error", _error(DELETED))
        return
    except Exception:
        log.exception("preparing a chat turn failed")
        yield say("error", {"code": "internal", "message": "the turn could not be prepared"})
        return
    yield say("meta", _meta(turn))
    async for pieces in turn.deltas():
        if isinstance(pieces, ToolEvent):
            yield say("tool", pieces.as_json())
        else:
            yield joined([say("delta", {"content": text}) for text in pieces])
    outcome = turn.outcome
    if outcome.answered:
        yield say("done", {"message_id": turn.reply_id, "finish_reason": outcome.finish_reason,
                           "usage": outcome.usage.as_json()})
    else:
        yield say("error", _error(outcome))


def _attached(settings: Settings, turn: Turn, journal: Journal) -> IdlePingResponse:
    """The answer as a task of its request: a client that goes away cancels it."""
    return event_stream(settings, _chat_events(turn, journal), on_shutdown=turn.stop,
                        beside=journal.watch)


def _detached(settings: Settings, detached: Detached, turn: Turn, journal: Journal,
              release: Callable[[], None]) -> IdlePingResponse:
    """The answer run by the server (resumable), its events passed on to the request
    while its client listens; `release` gives its stream slot back when it ends."""
    send, receive = anyio.create_memory_object_stream[ServerSentEvent | bytes](math.inf)

    async def run() -> None:
        try:
            async with journal.watching(), send, aclosing(_chat_events(turn, journal)) as events:
                async for event in events:
                    with suppress(anyio.BrokenResourceError):  # the client went away
                        send.send_nowait(event)
        finally:
            release()
            await turn.close()

    async def relayed() -> AsyncIterator[ServerSentEvent | bytes]:
        async with receive:
            async for event in receive:
                yield event

    detached.start(run, turn.stop)
    return event_stream(settings, relayed(), on_shutdown=turn.stop)


async def _end(journal: Journal, turn: Turn) -> None:
    await journal.close()
    await turn.close()


@dataclass
class Answering:
    """What a turn's answer is sent with, whichever route started the turn."""

    settings: Settings
    turn_events: TurnEventStore
    detached: Detached
    extractor: FactExtractor


def check_parent(parent_id: str | None, conversation_id: str | None) -> str | None:
    """The edit's parent (None: a new first message); only within a conversation."""
    if conversation_id is None:
        raise check.bad("parent_id", "needs the conversation_id of the message it follows")
    if not parent_id:
        raise check.bad("parent_id", f"must be a message id or {ROOT!r}")
    return None if parent_id == ROOT else parent_id


@post("/chat", summary="Chat (SSE stream or JSON)", status_code=200,
      operation_class=StreamingOperation)
async def chat(
    request: Request, settings: NamedDependency[Settings], sources: NamedDependency[Sources],
    llm: NamedDependency[LLM], slots: NamedDependency[StreamSlots], data: JSONBody[ChatRequest],
    tools_for: NamedDependency[Callable[[User], ToolRunner | None]],
    turn_events: NamedDependency[TurnEventStore], detached: NamedDependency[Detached],
    extractor: NamedDependency[FactExtractor],
) -> ASGIApp:
    await check.strict_scalars(request, ChatRequest)
    message = check_message(data.message, settings)
    resumable = check_resumable(data.resumable, data.stream, settings)
    if data.project_id is not None and not 0 < len(data.project_id.strip()) <= MAX_PROJECT_ID:
        raise check.bad("project_id", f"must be 1-{MAX_PROJECT_ID} characters")
    if data.project_id is not None:
        check.plain("project_id", data.project_id)
    name = data.name
    if name is not None:
        name = check.text("name", name, max_chars=MAX_NAME).strip()
    edit = data.parent_id is not None
    parent_id = check_parent(data.parent_id, data.conversation_id) if edit else None
    images = _images.listed(data.images, "images", settings)
    answering = Answering(settings, turn_events, detached, extractor)
    with slots.take(request.user.id) as slot:
        try:
            turn = await Turn.start(sources, llm, request.user, message, name=name,
                                    conversation_id=data.conversation_id,
                                    project_id=data.project_id, tools=tools_for(request.user),
                                    edit=edit, parent_id=parent_id, images=images)
        except NotAnAnswer:
            raise check.bad("parent_id", "must be an answer (an assistant message) of the "
                                         "conversation: the edited message follows it") from None
        return await answer(request, answering, turn, slot, stream=data.stream,
                            resumable=resumable)


def check_resumable(asked: bool | None, stream: bool, settings: Settings) -> bool:
    if asked and not stream:
        raise check.bad("resumable", "applies to streamed answers only (stream: true)")
    return settings.resumable if asked is None else asked


async def answer(request: Request, answering: Answering, turn: Turn, slot: Slot, *,
                 stream: bool, resumable: bool) -> ASGIApp:
    """The started `turn`'s answer: streamed (SSE), or one JSON object once it is whole."""
    settings, turn_events = answering.settings, answering.turn_events
    if turn.forgotten:  # facts gone with an abandoned branch: a sheet without them
        await _sheet_without(answering.extractor, turn)
    if stream and resumable:
        return _detached(settings, answering.detached, turn, Journal(turn_events, turn),
                         slot.hand_over())
    if stream:
        journal = Journal(turn_events, turn)
        return slot.keep_for(_attached(settings, turn, journal), lambda: _end(journal, turn))
    try:
        texts, tools = [], []
        async with Journal(turn_events, turn, record=False).watching():
            await turn.prepare(streaming=False)
            async for pieces in turn.deltas():
                if isinstance(pieces, ToolEvent):
                    tools.append(pieces.as_json())
                else:
                    texts.extend(pieces)
    finally:
        await turn.close()
    outcome = turn.outcome
    if not outcome.answered:
        status = 404 if outcome is DELETED else 502
        return error_response(request, status, outcome.error_message, extra={
            "code": outcome.error_code, "conversation_id": turn.conversation.id,
            "message_id": turn.reply_id,
        })
    # Each call once, as it ended (its "running" event is for streams).
    calls = [tool for tool in tools if tool["status"] != "running"]
    return Response({**_meta(turn), "content": "".join(texts), "tool_calls": calls,
                     "finish_reason": outcome.finish_reason, "usage": outcome.usage.as_json()},
                    headers=server_timing(turn))


async def _sheet_without(extractor: FactExtractor, turn: Turn) -> None:
    try:
        await extractor.regenerate_sheet(turn.user.id)
    except Exception:  # the next extraction makes it again; the turn goes on
        log.exception("the fact sheet could not be made again after a change of branch")


@dataclass
class RegenerateRequest:
    stream: bool = True
    resumable: bool | None = None  # None: CHATSVC_RESUMABLE


@post("/conversations/{conversation_id:str}/regenerate", summary="A new answer to the last "
      "question", status_code=200, operation_class=StreamingOperation)
async def regenerate(
    request: Request, settings: NamedDependency[Settings], sources: NamedDependency[Sources],
    llm: NamedDependency[LLM], slots: NamedDependency[StreamSlots],
    data: JSONBody[RegenerateRequest], conversation_id: FromPath[str],
    tools_for: NamedDependency[Callable[[User], ToolRunner | None]],
    turn_events: NamedDependency[TurnEventStore], detached: NamedDependency[Detached],
    extractor: NamedDependency[FactExtractor],
) -> ASGIApp:
    """Answered like POST /chat; the old answer stays as the new one's sibling."""
    await check.strict_scalars(request, RegenerateRequest)
    resumable = check_resumable(data.resumable, data.stream, settings)
    answering = Answering(settings, turn_events, detached, extractor)
    with slots.take(request.user.id) as slot:
        try:
            turn = await Turn.regenerate(sources, llm, request.user, conversation_id,
                                         tools=tools_for(request.user))
        except NothingToRegenerate as exc:
            return error_response(request, 409, f"nothing to regenerate: {exc}; send a "
                                  "message with POST /api/chat instead",
                                  extra={"code": "nothing_to_regenerate",
                                         "conversation_id": conversation_id})
        return await answer(request, answering, turn, slot, stream=data.stream,
                            resumable=resumable)


router = Router(path="/api", route_handlers=[chat, regenerate], tags=["chat"])
