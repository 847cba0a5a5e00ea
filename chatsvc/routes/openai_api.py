"""OpenAI-compatible facade: POST /v1/chat/completions and GET /v1/models.

The client's `messages` are the conversation; the service puts the user's stable
prefix in front and splices the per-message context in exactly as /api/chat does.
What is new in them, and the answer, is stored as a turn of one of the user's
conversations (chatsvc.chat.Exchange), unless the request says `"store": false` or
CHATSVC_V1_STORE is off. Tools are the client's: `tools` and the rest pass
through, the model's tool calls come back as OpenAI sends them, and the client
sends their results in its next request. Errors use OpenAI's shape (see _errors_http).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from functools import partial

from litestar import Request, Response, Router, get, post
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import JSONBody
from litestar.types import ASGIApp
from sse_starlette import ServerSentEvent

from chatsvc._admission import StreamSlots
from chatsvc._errors_http import error_response
from chatsvc._settings import Settings
from chatsvc.chat import Exchange, HeadStart, Limits, Outcome, Prepared, Relay, Sources, prepare
from chatsvc.llm import LLM, Piece, ToolCallDelta, ToolCalls, Usage
from chatsvc.routes import _validate as check
from chatsvc.routes._openai_messages import parse_messages
from chatsvc.routes._openai_options import for_bundled_model
from chatsvc.routes._openai_options import options as passed_through
from chatsvc.routes._openapi import OpenAIStreamingOperation
from chatsvc.routes.chat import check_message, event_stream, joined
from store.clock import new_id
from store.contract import ExchangeStore

MAX_CONVERSATION_NAME = 200


def _include_usage(data: dict) -> bool:
    options = data.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise check.bad("stream_options", "must be an object")
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise check.bad("stream_options.include_usage", "must be true or false")
    return include_usage


def _stored(data: dict, settings: Settings) -> bool:
    """Whether this exchange is kept: OpenAI's `store` field, within CHATSVC_V1_STORE."""
    store = data.get("store", True)
    if not isinstance(store, bool):
        raise check.bad("store", "must be true or false")
    return store and settings.v1_store


def _conversation_name(request: Request, settings: Settings) -> str | None:
    """The client's name for its conversation (CHATSVC_V1_CONVERSATION_HEADER), if sent."""
    header = settings.v1_conversation_header
    value = request.headers.get(header)
    if value is None:
        return None
    return check.text(header, value, max_chars=MAX_CONVERSATION_NAME).strip()


def _usage(usage: Usage) -> dict:
    """OpenAI's usage shape; `estimated` (chatsvc's) only when the upstream reported none."""
    body = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)}
    if usage.cached_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    return {**body, "estimated": True} if usage.estimated else body


def _extension(prepared: Prepared, exchange: Exchange | None) -> dict:
    """chatsvc's own fields (ignored by OpenAI clients); `conversation_id`: where the
    exchange is stored (null when it is not)."""
    return {"mode": prepared.mode, "degraded_reason": prepared.degraded_reason,
            "prefix_hash": prepared.assembly.prefix_hash, "sources": prepared.sources,
            "conversation_id": exchange.conversation.id if exchange else None}


def _chunk(ident: str, model: str, delta: dict, finish_reason: str | None = None) -> dict:
    return {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def _delta(piece: Piece, calls: ToolCalls) -> dict:
    if isinstance(piece, ToolCallDelta):
        return {"tool_calls": calls.add(piece)}  # as sent, a call's header only once
    return {"content": piece}


def _message(outcome: Outcome) -> dict:
    if not outcome.tool_calls:
        return {"role": "assistant", "content": outcome.content}
    return {"role": "assistant", "content": outcome.content or None,
            "tool_calls": outcome.tool_calls}


def _data(payload: dict) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(payload, ensure_ascii=False))


async def _stream(relay: Relay, ident: str, model: str,
                  include_usage: bool) -> AsyncIterator[ServerSentEvent | bytes]:
    yield _data(_chunk(ident, model, {"role": "assistant", "content": ""}))
    calls = ToolCalls()
    async with aclosing(relay.events()) as events:
        async for pieces in events:
            yield joined([_data(_chunk(ident, model, _delta(piece, calls))) for piece in pieces])
    outcome = relay.outcome
    if outcome.status != "complete":
        yield _data({"error": {"message": outcome.error_message, "type": "upstream_error",
                               "code": outcome.error_code}})
    else:
        yield _data(_chunk(ident, model, {}, outcome.finish_reason))
        if include_usage:
            yield _data({**_chunk(ident, model, {}), "choices": [], "usage": _usage(outcome.usage)})
    yield ServerSentEvent(data="[DONE]")


@post("/chat/completions", summary="OpenAI-compatible chat", status_code=200,
      operation_class=OpenAIStreamingOperation)
async def chat_completions(
    request: Request, settings: NamedDependency[Settings], sources: NamedDependency[Sources],
    llm: NamedDependency[LLM], slots: NamedDependency[StreamSlots],
    exchanges: NamedDependency[ExchangeStore], data: JSONBody[dict],
) -> ASGIApp:
    received = time.perf_counter()
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise check.bad("model", "must be a model id from GET /v1/models")
    if model != settings.llm_model:
        raise NotFoundException(f"model {model!r} does not exist; see GET /v1/models")
    history, current, after, images = parse_messages(data.get("messages"), settings)
    check_message(current, settings, "messages")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise check.bad("stream", "must be true or false")
    include_usage = _include_usage(data)
    options = passed_through(data)
    stored, name = _stored(data, settings), _conversation_name(request, settings)
    if settings.llm_is_bundled:
        options = for_bundled_model(options, model)
    with slots.take(request.user.id) as slot:
        # beside the stable layers, or the stored question
        head_start = HeadStart.when_free(sources, current, beside_write=stored)
        try:
            exchange = await Exchange.record(sources, exchanges, request.user.id, history,
                                             current, name, images) if stored else None
            prepared = await prepare(sources, request.user, history=history, current=current,
                                     conversation=exchange.conversation if exchange else None,
                                     after=after, head_start=head_start,
                                     images=[image.part() for image in images])
        finally:
            if head_start is not None:
                head_start.drop()
        relay = Relay(llm, prepared.assembly.messages,
                      limits=Limits.of(settings, streaming=stream),
                      on_finish=partial(exchange.answered, prepared=prepared, model=llm.model)
                      if exchange else None,
                      options=options, mode=prepared.mode, received_at=received)
        ident = f"chatcmpl-{new_id()}"
        if stream:
            return slot.keep_for(event_stream(
                settings, _stream(relay, ident, model, include_usage), on_shutdown=relay.stop
            ))
        async for _ in relay.events():
            pass  # the outcome has the whole answer
    outcome = relay.outcome
    if outcome.status != "complete":
        return error_response(request, 502, outcome.error_message)
    message = _message(outcome)
    return Response({
        "id": ident, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": outcome.finish_reason}],
        "usage": _usage(outcome.usage), "chatsvc": _extension(prepared, exchange),
    })


@get("/models", summary="The configured model")
async def models(settings: NamedDependency[Settings]) -> dict:
    return {"object": "list", "data": [
        {"id": settings.llm_model, "object": "model", "created": 0, "owned_by": "chatsvc"}
    ]}


router = Router(path="/v1", route_handlers=[chat_completions, models], tags=["openai"])
