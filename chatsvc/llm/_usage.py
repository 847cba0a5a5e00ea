"""Token usage as the upstream reports it, cached tokens included."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None  # None: the provider did not say (not the same as 0)

    def as_json(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens}


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
