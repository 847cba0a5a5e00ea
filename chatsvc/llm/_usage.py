"""Token usage as the upstream reports it (cached tokens included), or as chatsvc
counts it when the upstream reports none."""

from __future__ import annotations

from dataclasses import dataclass

from context.budget import tokens
from context.layers import content_text
from context.tokens import Tokenizer

# OpenAI's count for its chat format: 3 tokens of framing per message and 3 that
# start the reply. Other chat templates differ by a few tokens per message.
MESSAGE_FRAMING = 3
REPLY_PRIMING = 3


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None  # None: the provider did not say (not the same as 0)
    estimated: bool = False  # counted by chatsvc's tokenizer, not reported upstream

    def plus(self, other: Usage) -> Usage:
        """Both requests' usage (a turn with tool rounds makes several)."""
        return Usage(_sum(self.prompt_tokens, other.prompt_tokens),
                     _sum(self.completion_tokens, other.completion_tokens),
                     _sum(self.cached_tokens, other.cached_tokens),
                     self.estimated or other.estimated)

    def as_json(self) -> dict:
        body = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens}
        return {**body, "estimated": True} if self.estimated else body


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _field(obj, name: str):
    return obj.get(name) if isinstance(obj, dict) else None


def parse_usage(usage) -> Usage | None:
    """From a usage object as sent: OpenAI's `prompt_tokens_details.cached_tokens`, or
    Kimi's top-level `cached_tokens`."""
    if not isinstance(usage, dict):
        return None
    cached = _field(_field(usage, "prompt_tokens_details"), "cached_tokens")
    if cached is None:
        cached = _field(usage, "cached_tokens")
    return Usage(_field(usage, "prompt_tokens"), _field(usage, "completion_tokens"), cached)


def usage_or_estimate(reported: Usage | None, messages: list[dict], answer: str, *,
                      tokenizer: Tokenizer) -> Usage:
    """The upstream's usage when it gave token counts, else both counted with `tokenizer`
    and marked estimated (llama-cpp-python's server streams none). Cached tokens are
    never guessed: they stay as reported, or None."""
    if reported is not None and (reported.prompt_tokens is not None
                                 or reported.completion_tokens is not None):
        return reported
    prompt = sum(tokens(content_text(m.get("content")), tokenizer) + MESSAGE_FRAMING
                 for m in messages)  # the text of parts: an image's cost is the model's
    return Usage(prompt + REPLY_PRIMING, tokenizer.count(answer),
                 reported.cached_tokens if reported else None, estimated=True)
