"""assemble(): plain data in, the upstream message list + prefix hash + token counts out.

    [system][date/timezone][fact sheet][recent convos][memory][docs]   stable prefix
    [per-message context (user)][ack (assistant)]                     per message
    [history ...][current user message]

The stable prefix is one system message whose sections appear in that order
(empty layers are left out); its bytes depend only on the snapshot data, the
date and the timezone. `prefix_hash` is the sha256 of the canonical JSON of the
stable messages. Where the per-message block goes is a named strategy.

`in_history` keeps each turn's block in the history, just before the user
message it was found for, so every request extends the previous one (append-only:
a provider cache covers all but the newest turn), and a new block carries only the
items not already visible in the kept history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date

from context import render
from context.budget import Budgets, fit_lines, tokens, trim_history
from context.layers import (
    Doc,
    Excerpt,
    FactHit,
    MemoryItem,
    Message,
    Post,
    SheetFact,
    Snippet,
    content_text,
    with_images,
)
from context.snapshot import Snapshot
from context.tokens import DEFAULT_TOKENIZER, Tokenizer

STRATEGIES = ("before_conversation", "before_last_user", "in_history", "system_rag")
RETAINING = frozenset({"in_history"})  # strategies that keep blocks in the history
# The default since the cache harness measured it: 91 % of the prompt cacheable under
# OpenAI's rules from turn 2 vs 11 % for before_conversation (docs/evals.md).
DEFAULT_STRATEGY = "in_history"
DEFAULT_BUDGETS = Budgets()
MAX_EXCERPTS = 5  # earlier-conversation excerpts in one block, best first


@dataclass(frozen=True)
class Dynamic:
    """The per-message layers: RAG results, or the recent posts in fallback mode."""

    facts: Sequence[FactHit] = ()
    memories: Sequence[MemoryItem] = ()
    snippets: Sequence[Snippet] = ()
    excerpts: Sequence[Excerpt] = ()  # earlier stored messages (conversational recall)
    posts: Sequence[Post] | None = None  # set in fallback mode


@dataclass(frozen=True)
class Assembly:
    messages: list[dict[str, str]]
    prefix_hash: str
    stable_count: int  # messages[:stable_count] is the stable prefix
    context_index: int | None  # index of the per-message user block, if one was sent
    tokens: dict[str, int] = field(default_factory=dict)
    dropped_turns: int = 0
    # The block to store with the current user message ('' unless the strategy retains it).
    retained_context: str = ""
    # The fact sheet entries, memories and docs the stable prefix shows (budgets cut the tail).
    stable_facts: tuple[SheetFact, ...] = ()
    stable_memory: tuple[MemoryItem, ...] = ()
    stable_docs: tuple[Doc, ...] = ()
    # The earlier-conversation excerpts the per-message block shows.
    excerpts: tuple[Excerpt, ...] = ()


def canonical(messages: Sequence[dict[str, str]]) -> str:
    return json.dumps(list(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def prefix_hash(messages: Sequence[dict[str, str]]) -> str:
    return hashlib.sha256(canonical(messages).encode("utf-8")).hexdigest()


def _stable_sections(
    snapshot: Snapshot, today: date, timezone: str, budgets: Budgets
) -> tuple[dict[str, str], dict[str, int]]:
    """(section texts, how many items of each layer fit its budget)."""
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
    tokenizer = budgets.tokenizer
    shown = {}
    for name, placeholder, lines, budget in sources:
        header = tokens(render.template(name), tokenizer)
        kept = fit_lines(lines, budget, header, tokenizer=tokenizer)
        shown[name] = len(kept)
        if kept:
            layers[name] = render.section(name, **{placeholder: kept})
    return layers, shown


def _unseen(lines: list[str], seen: str) -> list[str]:
    # Every item line of a block sits between newlines, so this finds whole items only.
    return [line for line in lines if f"\n{line}\n" not in seen] if seen else lines


def message_context(
    dynamic: Dynamic, budget: int, seen: str = "", *, tokenizer: Tokenizer = DEFAULT_TOKENIZER
) -> str:
    """The per-message block text, '' when there is nothing to say.

    Items whose line already appears in `seen` (blocks kept in the history) are left
    out: the model can read them a few messages up; and the rules of a full block
    already there are not repeated.
    """
    return _block(dynamic, budget, seen, tokenizer)[0]


def _block(
    dynamic: Dynamic, budget: int, seen: str, tokenizer: Tokenizer
) -> tuple[str, list[str]]:
    """(the per-message block, the excerpt lines it shows)."""
    if dynamic.posts is not None:
        header = tokens(render.template("fallback_posts"), tokenizer)
        posts = _unseen(render.post_lines(dynamic.posts), seen)
        kept = fit_lines(posts, budget, header, tokenizer=tokenizer)
        return (render.section("fallback_posts", posts=kept) if kept else ""), []
    groups = [
        _unseen(render.fact_hit_lines(dynamic.facts), seen),
        _unseen(render.memory_lines(dynamic.memories), seen),
        _unseen(render.snippet_lines(dynamic.snippets), seen),
        _unseen(render.excerpt_lines(dynamic.excerpts), seen),
    ]
    if not any(groups):
        return "", []
    # Once a full block (with its rules) is in the history, later ones are short.
    short = _full_block_header() in seen
    name = "message_context_more" if short else "message_context"
    # Facts first, then memories, snippets and excerpts share what the budget leaves.
    left = budget - tokens(render.template(name), tokenizer)
    kept = []
    for lines in groups:
        fitted = fit_lines(lines, left, tokenizer=tokenizer)
        left -= sum(tokens(line, tokenizer) + 1 for line in fitted)
        kept.append(fitted)
    if not any(kept):  # not even one item fits: no rules around nothing
        return "", []
    if short:
        return render.section(name, items=[line for lines in kept for line in lines]), kept[3]
    return render.section(name, facts=kept[0], memories=kept[1], snippets=kept[2],
                          excerpts=kept[3]), kept[3]


def _recallable(excerpts: Sequence[Excerpt], visible: set[str]) -> tuple[Excerpt, ...]:
    """The best MAX_EXCERPTS excerpts whose text the prompt does not already show
    (kept history, the current message): recall adds what the model cannot see."""
    fresh = sorted((e for e in excerpts if e.text not in visible), key=lambda e: (-e.score, e.id))
    return tuple(fresh[:MAX_EXCERPTS])


def _full_block_header() -> str:
    return render.template("message_context").split("\n", 1)[0]


def message_limit(prompt: int, tokenizer: Tokenizer = DEFAULT_TOKENIZER) -> int:
    """The most tokens a user message can take under a prompt ceiling: what the system
    prompt leaves. The user's stable layers come on top; history and the per-message
    block give way to the message."""
    return prompt - tokens(render.template("system"), tokenizer)


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
    after: Sequence[Message] = (),
    images: Sequence[dict] = (),
) -> Assembly:
    """The prompt. `after`: what followed the current user message in its own turn
    (assistant tool calls and their results), sent after it and never trimmed.
    `images`: the current message's image parts, sent with its text and nowhere else
    (the stable prefix and the block never depend on them)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown placement strategy {strategy!r}: use one of {STRATEGIES}")
    sections, shown = _stable_sections(snapshot, today, timezone, budgets)
    stable = [{"role": "system", "content": "\n\n".join(sections.values())}]
    # An API client's own system messages stay (never trimmed) right after the
    # stable prefix; they are stable for that client's session too.
    instructions = [{"role": "system", "content": m.content} for m in history
                    if m.role == "system"]
    retain = strategy in RETAINING
    turns = [m if retain else replace(m, context="") for m in history if m.role != "system"]
    # Kept blocks live in the history: it gets their budget too, so the prompt has
    # the same ceiling under every layout.
    tokenizer = budgets.tokenizer
    allowed = budgets.history + (budgets.message_context if retain else 0)
    block_budget = budgets.message_context
    if budgets.prompt is not None:
        # The history gives way first when the model's window is small, then the block.
        fixed = sum(tokens(m["content"], tokenizer) for m in stable + instructions)
        fixed += tokens(current, tokenizer) + sum(tokens(m.size_text(), tokenizer) for m in after)
        ack = tokens(render.template("ack"), tokenizer)
        block_budget = max(0, min(block_budget, budgets.prompt - fixed - ack))
        # Room for the block as it would be with no history to omit items from (none
        # when nothing was found), not its whole budget.
        whole = message_context(dynamic, block_budget, tokenizer=tokenizer)
        reserved = tokens(whole, tokenizer) + ack if whole else 0
        allowed = max(0, min(allowed, budgets.prompt - fixed - reserved))
    kept, dropped = trim_history(turns, allowed, budgets.history_refill, tokenizer=tokenizer)
    seen = "".join(f"\n{m.context}\n" for m in kept if m.context)
    dynamic = replace(dynamic, excerpts=_recallable(
        dynamic.excerpts, {m.content for m in kept} | {current}))
    block, recalled = _block(dynamic, block_budget, seen, tokenizer)
    conversation = [entry for m in kept for entry in _with_context(m)]
    conversation.append({"role": "user", "content": with_images(current, tuple(images))})

    messages, context_index = _place(strategy, stable + instructions, conversation, block)
    messages += [m.wire() for m in after]

    counts = {name: tokens(text, tokenizer) for name, text in sections.items()}
    counts["message_context"] = tokens(block, tokenizer) if block else 0
    counts["history"] = sum(tokens(content_text(m["content"]), tokenizer)
                            for m in instructions + conversation[:-1])
    counts["current"] = tokens(current, tokenizer)
    counts["total"] = sum(tokens(content_text(m["content"]), tokenizer) for m in messages)
    return Assembly(
        messages=messages,
        prefix_hash=prefix_hash(stable),
        stable_count=len(stable),
        context_index=context_index,
        tokens=counts,
        dropped_turns=dropped,
        retained_context=block if retain else "",
        stable_facts=tuple(render.sheet_order(snapshot.fact_sheet)[: shown["fact_sheet"]]),
        stable_memory=tuple(render.memory_order(snapshot.memory)[: shown["memory"]]),
        stable_docs=tuple(snapshot.docs[: shown["docs"]]),
        excerpts=tuple(e for e in dynamic.excerpts
                       if render.excerpt_lines([e])[0] in set(recalled)),
    )


def _place(
    strategy: str, head: list[dict[str, str]], conversation: list[dict[str, str]], block: str
) -> tuple[list[dict[str, str]], int | None]:
    """(messages, index of the block's user message or None) for a placement strategy."""
    if not block:
        return head + conversation, None
    if strategy == "system_rag":
        # The common mistake, kept for the evaluation harness: the query-dependent
        # block inside the system prompt changes the first bytes on every turn.
        system = {"role": "system", "content": head[0]["content"] + "\n\n" + block}
        return [system, *head[1:], *conversation], 0
    if strategy in ("before_last_user", "in_history"):
        head = head + conversation[:-1]
        conversation = conversation[-1:]
    return head + _context_pair(block) + conversation, len(head)


def _context_pair(block: str) -> list[dict[str, str]]:
    """A block goes to the model as a user message answered by a fixed acknowledgement."""
    if not block:
        return []
    return [{"role": "user", "content": block},
            {"role": "assistant", "content": render.template("ack")}]


def _with_context(message: Message) -> list[dict]:
    return [*_context_pair(message.context), message.wire()]
