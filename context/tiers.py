"""L0 abstract / L1 overview of a knowledge entry. Pure: text in, text out.

`extractive_tiers` always works (first sentences, headings). The LLM variant is
built from `tier_messages` (bounded input) and read back with `parse_tiers`;
anything unusable there returns None and the extractive tiers stay.
"""

from __future__ import annotations

import json
import re

import prompts
from context.chunking import join_sentences, split_sentences
from context.tokens import DEFAULT_TOKENIZER, Tokenizer

ABSTRACT_SENTENCES = 3
ABSTRACT_MAX_CHARS = 400
OVERVIEW_POINTS = 8
POINT_MAX_CHARS = 200
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


def extractive_tiers(title: str, content: str) -> tuple[str, str]:
    """(abstract, overview) from the text itself: first sentences and headings."""
    headings, paragraphs = _structure(content)
    body = join_sentences(paragraphs) or title
    abstract = _clip(join_sentences(split_sentences(body)[:ABSTRACT_SENTENCES]), ABSTRACT_MAX_CHARS)
    points = [f"{h}: {_first_sentence(p)}" if p else h for h, p in headings]
    if len(points) < 2:
        points = [_first_sentence(p) for p in paragraphs]
    points = [_clip(p, POINT_MAX_CHARS) for p in points if p][:OVERVIEW_POINTS]
    return abstract, "\n".join(f"- {p}" for p in points)


def _structure(content: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(heading, first paragraph under it) pairs and the plain paragraphs."""
    headings: list[tuple[str, str]] = []
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", content):
        lines = [line for line in block.strip().splitlines() if line.strip()]
        text_lines = []
        for line in lines:
            match = _HEADING.match(line)
            if match:
                headings.append((match.group(1), ""))
            else:
                text_lines.append(line.strip())
        if text_lines:
            paragraph = " ".join(text_lines)
            paragraphs.append(paragraph)
            if headings and not headings[-1][1]:
                headings[-1] = (headings[-1][0], paragraph)
    return headings, paragraphs


def _first_sentence(text: str) -> str:
    sentences = split_sentences(text)
    return sentences[0] if sentences else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
    points = [_clip(str(p).strip(), POINT_MAX_CHARS) for p in points if str(p).strip()]
    overview = "\n".join(f"- {p}" for p in points[:OVERVIEW_POINTS])
    return _clip(abstract.strip(), ABSTRACT_MAX_CHARS), overview
