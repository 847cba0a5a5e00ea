"""The upstream LLM through the official `openai` client: streaming, retries, usage.

The one client of chat completions: chat turns stream, background jobs (fact
extraction, knowledge tiers) take the whole answer from the same stream, so every
request gets the same retries and the same system-role folding. The client sends
the request (and raises its typed errors for a failed status); the streamed body
is read as bytes (see _sse_in).

Retries happen only before the first content token (connection errors, 429,
5xx, a stream that dies or ends unfinished before saying anything): after that a
retry would repeat text the client already has, so the failure is reported instead.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import aclosing, suppress
from dataclasses import dataclass

import anyio
import httpx2
import openai

from chatsvc._errors import UpstreamError, UpstreamIncomplete
from chatsvc._settings import Settings
from chatsvc.llm._json import json_options
from chatsvc.llm._sse_in import Chunks, EventData, IncompleteAnswer, Piece
from chatsvc.llm._usage import Usage
from context.tokens import get_tokenizer

log = logging.getLogger("chatsvc.llm")

CLOSE_TIMEOUT_SECONDS = 1.0


@dataclass(frozen=True)
class Finish:
    finish_reason: str | None
    usage: Usage | None


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return isinstance(exc, openai.APIError)


def _upstream_error(exc: Exception) -> UpstreamError:
    if isinstance(exc, IncompleteAnswer):
        return UpstreamIncomplete(f"the answer is incomplete: {exc}")
    status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
    return UpstreamError(f"{type(exc).__name__}: {exc}", status_code=status)


def fold_system(messages: list[dict]) -> list[dict]:
    """System messages moved to the front of the first user message, in order.

    For chat formats that drop the system role (llama-cpp-python's `gemma`): the
    stable prefix still reaches the model, and still first, so its cache still works.
    """
    system = [m.get("content") or "" for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    first_user = next((m for m in rest if m.get("role") == "user"), None)
    if not system or first_user is None:
        return [dict(m) for m in messages]
    head, content = "\n\n".join(system), first_user.get("content") or ""
    if isinstance(content, list):  # text and image parts: the head goes first, as a part
        first_user["content"] = [{"type": "text", "text": head + "\n\n"}, *content]
    else:
        first_user["content"] = f"{head}\n\n{content}"
    return rest


class LLM:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model = settings.llm_model
        self.fold_system = settings.llm_system_role == "fold"
        self.retries = settings.llm_retries
        self.backoff = settings.llm_retry_backoff_seconds
        self.tokenizer = get_tokenizer(settings.tokenizer)  # for usage the upstream omits
        self._client: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> openai.AsyncOpenAI:
        """Built on first use, and again after `aclose`: its connections belong to the
        event loop that opened them (a CLI command may run several loops in turn)."""
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                base_url=self.settings.llm_base_url,
                api_key=self.settings.llm_api_key or "unused",
                timeout=self.settings.llm_timeout_seconds,
                max_retries=0,  # retried here, and only before the first token
            )
        return self._client

    async def stream(self, messages: list[dict], *, model: str | None = None,
                     **options) -> AsyncIterator[list[Piece] | Finish]:
        """Lists of pieces (text and tool-call fragments that arrived together), then
        one Finish (a finish reason "tool_calls" is a whole answer too).

        Raises UpstreamError when it fails."""
        for attempt in range(self.retries + 1):
            said_something = False
            attempt_events = self._attempt(messages, model or self.model, options)
            try:
                async with aclosing(attempt_events) as events:
                    async for event in events:
                        said_something = said_something or isinstance(event, list)
                        yield event
                return
            except openai.APIError as exc:
                if said_something or attempt == self.retries or not _retryable(exc):
                    raise _upstream_error(exc) from exc
                log.warning("upstream failed before the first token (%s), retry %d/%d",
                            exc, attempt + 1, self.retries)
                await anyio.sleep(self.backoff * 2**attempt)

    async def _attempt(self, messages, model, options) -> AsyncIterator[list[Piece] | Finish]:
        if self.fold_system:
            messages = fold_system(messages)
        stream = await self.client.chat.completions.create(
            model=model, messages=messages, stream=True,
            stream_options={"include_usage": True}, **options,
        )
        chunks, events = Chunks(stream.response.request), EventData()
        try:
            async with aclosing(_body(stream.response)) as body:
                async for data in body:
                    pieces, error = chunks.read_all(events.feed(data))
                    if pieces:
                        yield pieces
                    if error is not None:
                        raise error
                    if chunks.done:
                        break
        finally:
            await close_quietly(stream)
        unfinished = chunks.unfinished(stream.response.headers.get("content-type", ""))
        if unfinished is not None:
            raise unfinished
        yield Finish(chunks.finish_reason, chunks.usage)

    async def complete(
        self, messages: list[dict], *, model: str | None = None, timeout: float | None = None,
        json_mode: str = "off", schema: dict | None = None, **options,
    ) -> str:
        """The whole answer at once, read from the same stream (so retried the same way).

        `timeout` bounds the whole call, retries included; `json_mode` and `schema`
        ask for a JSON object (see `json_options`). Raises UpstreamError when it fails.
        """
        parts: list[str] = []
        events = self.stream(messages, model=model, **json_options(json_mode, schema), **options)
        try:
            with anyio.fail_after(timeout):
                async with aclosing(events) as stream:
                    async for event in stream:
                        if not isinstance(event, Finish):
                            parts.extend(piece for piece in event if isinstance(piece, str))
        except TimeoutError:
            raise UpstreamError(f"no complete answer within {timeout:g} s") from None
        return "".join(parts)

    async def connect(self) -> None:
        """Build the client, load openai's chat modules and open a connection to the
        upstream (GET /models), so that the first chat turn after a start does none of it
        (~0.5 s on a busy 2-core machine, more with TLS to a hosted API). Raises the
        openai client's error when the upstream does not answer."""
        self.client.chat.completions  # noqa: B018 (its first access imports the chat modules)
        await self.client.models.list()

    async def aclose(self) -> None:
        """Close the connections (in the loop that opened them); a later call reopens."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


async def _body(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The response body as it arrives, with transport failures as the openai client's
    errors (the same mapping as its own stream reader)."""
    try:
        async for data in response.aiter_bytes():
            yield data
    except httpx2.TimeoutException as exc:
        raise openai.APITimeoutError(request=response.request) from exc
    except (httpx2.RequestError, anyio.EndOfStream, ssl.SSLError) as exc:
        raise openai.APIConnectionError(request=response.request) from exc


async def close_quietly(stream) -> None:
    """Close the upstream response even while being cancelled (client gone), within 1 s."""
    with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS, shield=True), suppress(Exception):
        await stream.close()
