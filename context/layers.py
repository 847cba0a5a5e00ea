"""The plain data `assemble` takes: one small frozen dataclass per kind of item.

chatsvc fills these from the store; nothing here knows where they came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

CATEGORY_ORDER = ("core", "technical", "project", "transient")


@dataclass(frozen=True)
class SheetFact:
    """One fact sheet entry (stable prefix): the fact's id, and rank = its position in
    the sheet (0 first)."""

    id: str
    category: str
    fact: str
    rank: int


@dataclass(frozen=True)
class ConversationSummary:
    """An earlier conversation of the user (stable prefix): date only, never a clock."""

    id: str
    title: str
    created_at: str  # ISO-8601 UTC; rendered as its date


@dataclass(frozen=True)
class MemoryItem:
    """A saved memory (baseline in the stable prefix; with `distance` when recalled)."""

    id: str
    type: str
    content: str
    distance: float | None = None


@dataclass(frozen=True)
class Doc:
    """A pinned document (stable prefix) in the form that fit the docs budget: its
    full text, or its overview or abstract (`tier`), which the prompt marks as such."""

    id: str
    title: str
    content: str
    tier: str = "full"  # "full" (L2) | "overview" (L1) | "abstract" (L0)


@dataclass(frozen=True)
class FactHit:
    """A fact found for the current message (per-message block)."""

    id: str
    category: str
    fact: str
    distance: float
    last_extracted_at: str | None = None


@dataclass(frozen=True)
class Snippet:
    """A knowledge chunk found for the current message (per-message block)."""

    id: str
    title: str
    text: str
    score: float


@dataclass(frozen=True)
class Excerpt:
    """An earlier stored message found for the current message (per-message block)."""

    id: str
    conversation_id: str
    speaker: str  # the message's name, else its role as a word
    text: str
    created_at: str  # ISO-8601 UTC; rendered as its date
    score: float


@dataclass(frozen=True)
class Post:
    """A recent published post: the per-message block in fallback mode."""

    id: str
    title: str
    excerpt: str


def with_images(text: str, images: tuple[dict, ...]) -> str | list[dict]:
    """A message's content: its text, or with images its text part and theirs."""
    return [{"type": "text", "text": text}, *images] if images else text


def content_text(content: str | list[dict] | None) -> str:
    """The text of a message's content, whether a string or a list of parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


@dataclass(frozen=True)
class Message:
    """A history message: role is user, assistant, tool or system (an API client's own).

    `context` is the per-message block that was sent with a user message, kept only
    by layouts that retain blocks in the history. An assistant message that called
    tools carries its `tool_calls` (OpenAI's shape, as sent), a tool result the
    `tool_call_id` it answers. A user message's `images` are OpenAI `image_url`
    parts: it is then sent as a list of parts, its text first.
    """

    role: str
    content: str
    context: str = ""
    tool_calls: tuple[dict, ...] = ()
    tool_call_id: str = ""
    images: tuple[dict, ...] = ()

    def wire(self) -> dict:
        """The message as sent upstream: the same bytes every time it is replayed."""
        entry: dict = {"role": self.role, "content": with_images(self.content, self.images)}
        if self.tool_calls:
            entry["tool_calls"] = list(self.tool_calls)
        if self.tool_call_id:
            entry["tool_call_id"] = self.tool_call_id
        return entry

    def size_text(self) -> str:
        """What the message costs in tokens, its tool calls included."""
        calls = json.dumps(list(self.tool_calls)) if self.tool_calls else ""
        return self.content + self.context + calls
