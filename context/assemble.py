"""assemble(): plain data in, the upstream message list + prefix hash + token counts out.

    [system][date/timezone][fact sheet][recent convos][memory][docs]   stable prefix
    [per-message context (user)][ack (assistant)]                     per message
    [history ...][current user message]

The stable prefix is one system message whose sections appear in that order
(empty layers are left out); its bytes depend only on the snapshot data, the
date and the timezone. `prefix_hash` is the sha256 of the canonical JSON of the
stable messages. Where the per-message block goes is a named strategy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from context import render
from context.budget import Budgets, fit_lines, tokens, trim_history
from context.layers import FactHit, MemoryItem, Message, Post, Snippet
from context.snapshot import Snapshot

STRATEGIES = ("before_conversation", "before_last_user", "system_rag")
DEFAULT_STRATEGY = "before_conversation"
DEFAULT_BUDGETS = Budgets()


@dataclass(frozen=True)
class Dynamic:
    """The per-message layers: RAG results, or the recent posts in fallback mode."""

    facts: Sequence[FactHit] = ()
    memories: Sequence[MemoryItem] = ()
    snippets: Sequence[Snippet] = ()
    posts: Sequence[Post] | None = None  # set in fallback mode


@dataclass(frozen=True)
class Assembly:
    messages: list[dict[str, str]]
    prefix_hash: str
    stable_count: int  # messages[:stable_count] is the stable prefix
    context_index: int | None  # index of the per-message user block, if one was sent
    tokens: dict[str, int] = field(default_factory=dict)
    dropped_turns: int = 0


def canonical(messages: Sequence[dict[str, str]]) -> str:
    return json.dumps(list(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def prefix_hash(messages: Sequence[dict[str, str]]) -> str:
    return hashlib.sha256(canonical(messages).encode("utf-8")).hexdigest()


def _stable_sections(
    snapshot: Snapshot, today: date, timezone: str, budgets: Budgets
) -> dict[str, str]:
    layers = {
        "system": render.template("system"),
        "date": render.date_text(today, timezone),
    }
    sources = (
        ("fact_sheet", "facts", render.sheet_lines(snapshot.fact_sheet), budgets.fact_sheet),
        ("recent_conversations", "conversations",
         render.conversation_lines(snapshot.recent_conversations), budgets.recent_conversations),
        ("memory", "memories", render.memory_lines(snapshot.memory), budgets.memory),
        ("docs", "docs", render.doc_lines(snapshot.docs), budgets.docs),
    )
    for name, placeholder, lines, budget in sources:
        header = tokens(render.template(name))
        kept = fit_lines(lines, budget, header)
        if kept:
            layers[name] = render.section(name, **{placeholder: kept})
    return layers


def message_context(dynamic: Dynamic, budget: int) -> str:
    """The per-message block text, '' when there is nothing to say."""
    if dynamic.posts is not None:
        header = tokens(render.template("fallback_posts"))
        kept = fit_lines(render.post_lines(dynamic.posts), budget, header)
        return render.section("fallback_posts", posts=kept) if kept else ""
    groups = [
        render.fact_hit_lines(dynamic.facts),
        render.memory_lines(dynamic.memories),
        render.snippet_lines(dynamic.snippets),
    ]
    if not any(groups):
        return ""
    # Facts first, then memories, then snippets share what the budget leaves.
    left = budget - tokens(render.template("message_context"))
    kept = []
    for lines in groups:
        fitted = fit_lines(lines, left)
        left -= sum(tokens(line) + 1 for line in fitted)
        kept.append(fitted)
    return render.section("message_context", facts=kept[0], memories=kept[1], snippets=kept[2])


def assemble(
    *,
    snapshot: Snapshot,
    today: date,
    timezone: str,
    dynamic: Dynamic,
    history: Sequence[Message],
    current: str,
    strategy: str = DEFAULT_STRATEGY,
    budgets: Budgets = DEFAULT_BUDGETS,
) -> Assembly:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown placement strategy {strategy!r}: use one of {STRATEGIES}")
    sections = _stable_sections(snapshot, today, timezone, budgets)
    stable = [{"role": "system", "content": "\n\n".join(sections.values())}]
    block = message_context(dynamic, budgets.message_context)
    # An API client's own system messages stay (never trimmed) right after the
    # stable prefix; they are stable for that client's session too.
    instructions = [{"role": "system", "content": m.content} for m in history
                    if m.role == "system"]
    turns = [m for m in history if m.role != "system"]
    kept, dropped = trim_history(turns, budgets.history, budgets.step_turns)
    conversation = [{"role": m.role, "content": m.content} for m in kept]
    conversation.append({"role": "user", "content": current})

    pair = [{"role": "user", "content": block},
            {"role": "assistant", "content": render.template("ack")}] if block else []
    if strategy == "system_rag" and block:
        # The common mistake, kept for the evaluation harness: the query-dependent
        # block inside the system prompt changes the first bytes on every turn.
        sent = [{"role": "system", "content": stable[0]["content"] + "\n\n" + block}]
        messages, context_index = sent + instructions + conversation, 0
    elif strategy == "before_last_user":
        head = stable + instructions + conversation[:-1]
        messages = head + pair + conversation[-1:]
        context_index = len(head) if block else None
    else:
        head = stable + instructions
        messages = head + pair + conversation
        context_index = len(head) if block else None

    counts = {name: tokens(text) for name, text in sections.items()}
    counts["message_context"] = tokens(block) if block else 0
    counts["history"] = sum(tokens(m["content"]) for m in instructions + conversation[:-1])
    counts["current"] = tokens(current)
    counts["total"] = sum(tokens(m["content"]) for m in messages)
    return Assembly(
        messages=messages,
        prefix_hash=prefix_hash(stable),
        stable_count=len(stable),
        context_index=context_index,
        tokens=counts,
        dropped_turns=dropped,
    )
