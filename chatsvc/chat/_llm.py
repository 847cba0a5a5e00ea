"""The upstream LLM through the official `openai` client: streaming, retries, usage.

Retries happen only before the first content token (connection errors, 429,
5xx, a stream that dies before saying anything): after that a retry would
repeat text the client already has, so the failure is reported instead.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing, suppress
from dataclasses import dataclass

import anyio
import openai

from chatsvc._errors import UpstreamError
from chatsvc._settings import Settings

log = logging.getLogger("chatsvc.llm")

CLOSE_TIMEOUT_SECONDS = 1.0


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None  # None: the provider did not say (not the same as 0)

    def as_json(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens}


@dataclass(frozen=True)
class Delta:
    content: str


@dataclass(frozen=True)
class Finish:
    finish_reason: str | None
    usage: Usage | None


def _field(obj, name: str):
    """An attribute, also from a pydantic model's extra fields (provider extensions)."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        value = (getattr(obj, "model_extra", None) or {}).get(name)
    return value


def parse_usage(usage) -> Usage | None:
    """OpenAI's `prompt_tokens_details.cached_tokens`, or Kimi's top-level `cached_tokens`."""
    if usage is None:
        return None
    cached = _field(_field(usage, "prompt_tokens_details"), "cached_tokens")
    if cached is None:
        cached = _field(usage, "cached_tokens")
    return Usage(_field(usage, "prompt_tokens"), _field(usage, "completion_tokens"), cached)


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return isinstance(exc, openai.APIError)


def _upstream_error(exc: Exception) -> UpstreamError:
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
    first_user["content"] = "\n\n".join([*system, first_user.get("content") or ""])
    return rest


class LLM:
    def __init__(self, settings: Settings) -> None:
        self.model = settings.llm_model
        self.fold_system = settings.llm_system_role == "fold"
        self.retries = settings.llm_retries
        self.backoff = settings.llm_retry_backoff_seconds
        self.client = openai.AsyncOpenAI(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key or "unused",
            timeout=settings.llm_timeout_seconds,
            max_retries=0,  # retried here, and only before the first token
        )

    async def stream(self, messages: list[dict], *, model: str | None = None,
                     **options) -> AsyncIterator[Delta | Finish]:
        """Deltas with text, then one Finish. Raises UpstreamError when it fails."""
        for attempt in range(self.retries + 1):
            said_something = False
            attempt_events = self._attempt(messages, model or self.model, options)
            try:
                async with aclosing(attempt_events) as events:
                    async for event in events:
                        said_something = said_something or isinstance(event, Delta)
                        yield event
                return
            except openai.APIError as exc:
                if said_something or attempt == self.retries or not _retryable(exc):
                    raise _upstream_error(exc) from exc
                log.warning("upstream failed before the first token (%s), retry %d/%d",
                            exc, attempt + 1, self.retries)
                await anyio.sleep(self.backoff * 2**attempt)

    async def _attempt(self, messages, model, options) -> AsyncIterator[Delta | Finish]:
        if self.fold_system:
            messages = fold_system(messages)
        stream = await self.client.chat.completions.create(
            model=model, messages=messages, stream=True,
            stream_options={"include_usage": True}, **options,
        )
        finish_reason, usage = None, None
        try:
            async for chunk in stream:
                usage = parse_usage(chunk.usage) or usage
                for choice in chunk.choices:
                    # Kimi streams its usage inside the last choice.
                    usage = parse_usage(_field(choice, "usage")) or usage
                    finish_reason = choice.finish_reason or finish_reason
                    if choice.delta and choice.delta.content:
                        yield Delta(choice.delta.content)
        finally:
            await close_quietly(stream)
        yield Finish(finish_reason, usage)

    async def complete(self, messages: list[dict], *, model: str | None = None,
                       **options) -> tuple[str, Finish]:
        """The whole answer at once (reads the same stream)."""
        parts: list[str] = []
        finish = Finish(None, None)
        async with aclosing(self.stream(messages, model=model, **options)) as events:
            async for event in events:
                if isinstance(event, Delta):
                    parts.append(event.content)
                else:
                    finish = event
        return "".join(parts), finish

    async def aclose(self) -> None:
        await self.client.close()


async def close_quietly(stream) -> None:
    """Close the upstream response even while being cancelled (client gone), within 1 s."""
    with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS, shield=True), suppress(Exception):
        await stream.close()
