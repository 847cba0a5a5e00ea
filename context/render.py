"""Layer text from the templates in prompts/. Deterministic: same data, same bytes.

Every `*_lines` function returns one string per item in the order it will be
shown, so budgets can drop whole items from the end; `section` wraps them in
their template.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import prompts
from context.layers import (
    CATEGORY_ORDER,
    ConversationSummary,
    Doc,
    Excerpt,
    FactHit,
    MemoryItem,
    Post,
    SheetFact,
    Snippet,
)

NONE_FOUND = "(none found)"
EXCERPT_CHARS = 300  # of one earlier message: enough to recall it, not to replay it


def template(name: str) -> str:
    return prompts.load(name).rstrip("\n")


def section(name: str, **blocks: Sequence[str]) -> str:
    """Template `name` with each placeholder filled by its lines (or NONE_FOUND)."""
    filled = {key: "\n".join(lines) if lines else NONE_FOUND for key, lines in blocks.items()}
    return template(name).format(**filled)


def date_text(today: date, timezone: str) -> str:
    return template("date").format(
        weekday=today.strftime("%A"), date=today.isoformat(), timezone=timezone
    )


def _category_rank(category: str) -> int:
    return CATEGORY_ORDER.index(category) if category in CATEGORY_ORDER else len(CATEGORY_ORDER)


def sheet_order(facts: Sequence[SheetFact]) -> list[SheetFact]:
    return sorted(facts, key=lambda f: (_category_rank(f.category), f.rank))


def sheet_lines(facts: Sequence[SheetFact]) -> list[str]:
    return [f"- [{f.category}] {f.fact}" for f in sheet_order(facts)]


def conversation_lines(conversations: Sequence[ConversationSummary]) -> list[str]:
    ordered = sorted(conversations, key=lambda c: (c.created_at, c.id))
    return [f"- {c.created_at[:10]}: {c.title}" for c in ordered]


def memory_order(memories: Sequence[MemoryItem]) -> list[MemoryItem]:
    # Baseline order is the memory store's deterministic rule; recalled items come
    # sorted by distance with an id tie-break.
    if any(m.distance is not None for m in memories):
        return sorted(memories, key=lambda m: (m.distance or 0.0, m.id))
    return list(memories)


def memory_lines(memories: Sequence[MemoryItem]) -> list[str]:
    return [f"- [{m.type}] {m.content}" for m in memory_order(memories)]


def doc_line(doc: Doc) -> str:
    # A shortened document says so, and where its full text is.
    note = "" if doc.tier == "full" else f"\n({doc.tier}; full text available: {doc.id})"
    return f"### {doc.title}\n{doc.content}{note}"


def doc_lines(docs: Sequence[Doc]) -> list[str]:
    # Pin order (pin time, then id) is the store's deterministic rule.
    return [doc_line(d) for d in docs]


def _when(stamp: str | None) -> str:
    # "2026-11-20T14:03:07.123456Z" -> "2026-11-20 14:03 UTC"
    return f" (last extracted: {stamp[:10]} {stamp[11:16]} UTC)" if stamp else ""


def fact_hit_lines(facts: Sequence[FactHit]) -> list[str]:
    ordered = sorted(facts, key=lambda f: (f.distance, f.id))
    return [f"[{f.category}] {f.fact}{_when(f.last_extracted_at)}" for f in ordered]


def snippet_lines(snippets: Sequence[Snippet]) -> list[str]:
    ordered = sorted(snippets, key=lambda s: (-s.score, s.id))
    return [f"[{s.title}] {s.text}" for s in ordered]


def excerpt_lines(excerpts: Sequence[Excerpt]) -> list[str]:
    """Best match first (budgets cut the tail); each on one line, whitespace collapsed."""
    ordered = sorted(excerpts, key=lambda e: (-e.score, e.id))
    return [f"[{e.created_at[:10]}] {e.speaker}: {excerpt_text(e.text)}" for e in ordered]


def excerpt_text(text: str) -> str:
    """An earlier message as the block quotes it: one line, at most EXCERPT_CHARS."""
    line = " ".join(text.split())
    return line if len(line) <= EXCERPT_CHARS else line[: EXCERPT_CHARS - 1].rstrip() + "…"


def post_lines(posts: Sequence[Post]) -> list[str]:
    # Posts arrive newest first; that order is the point of the fallback.
    return [f"[{p.title}]\n{p.excerpt}" for p in posts]
