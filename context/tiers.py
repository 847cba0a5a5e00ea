"""L0 abstract / L1 overview of a knowledge entry. Pure: text in, text out.

`extractive_tiers` (context/extractive.py) always works: whole sentences of the text
itself. The LLM variant is built from `tier_messages` (bounded input) and read back
with `parse_tiers`; anything unusable there returns None and the extractive tiers stay.
"""

from __future__ import annotations

import json

import prompts
from context.extractive import (
    ABSTRACT_MAX_CHARS,
    OVERVIEW_POINTS,
    POINT_MAX_CHARS,
    clip,
    extractive_tiers,
)
from context.tokens import DEFAULT_TOKENIZER, Tokenizer

__all__ = ["extractive_tiers", "parse_tiers", "tier_messages"]


def tier_messages(
    title: str, content: str, *, max_input_tokens: int = 3000,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
) -> list[dict]:
    """The chat messages asking an LLM for the tiers; the document is cut to a token budget."""
    content = tokenizer.truncate(content, max_input_tokens)
    return [
        {"role": "system", "content": prompts.load("knowledge_tiers")},
        {"role": "user", "content": f"Title: {title}\n\n{content}"},
    ]


def parse_tiers(reply: str) -> tuple[str, str] | None:
    """(abstract, overview) from the LLM's JSON reply, or None when it is unusable."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(reply[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    abstract, points = data.get("abstract"), data.get("overview")
    if not isinstance(abstract, str) or not abstract.strip():
        return None
    if isinstance(points, str):
        points = [points]
    if not isinstance(points, list):
        return None
    points = [clip(str(p).strip(), POINT_MAX_CHARS) for p in points if str(p).strip()]
    overview = "\n".join(f"- {p}" for p in points[:OVERVIEW_POINTS])
    return clip(abstract.strip(), ABSTRACT_MAX_CHARS), overview
