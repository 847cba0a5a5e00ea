"""Token budgets: whole items dropped from the end of a layer, whole turns from history.

History is trimmed in large steps (`step_turns` whole turns at a time, on a fixed
grid counted from the first turn), so the first kept turn moves only when the
history outgrows the budget again: most turns send the same history start and
keep the upstream cache warm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from context.layers import Message
from context.tokens import count_tokens


@dataclass(frozen=True, kw_only=True)
class Budgets:
    fact_sheet: int = 3000
    recent_conversations: int = 400
    memory: int = 1500
    docs: int = 4000
    message_context: int = 2000
    history: int = 8000
    step_turns: int = 8


@lru_cache(maxsize=65536)
def tokens(text: str) -> int:
    return count_tokens(text)


def fit_lines(lines: Sequence[str], budget: int, overhead: int = 0) -> list[str]:
    """The longest prefix of `lines` whose tokens (plus `overhead`) stay within budget."""
    used = overhead
    kept: list[str] = []
    for line in lines:
        used += tokens(line) + 1  # +1 for the joining newline
        if used > budget:
            break
        kept.append(line)
    return kept


def split_turns(history: Sequence[Message]) -> list[list[Message]]:
    """Whole turns: each starts at a user message (leading non-user messages form one)."""
    turns: list[list[Message]] = []
    for message in history:
        if message.role == "user" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def trim_history(
    history: Sequence[Message], budget: int, step_turns: int
) -> tuple[list[Message], int]:
    """(kept messages, dropped turn count): oldest whole turns go first, on a step grid."""
    turns = split_turns(history)
    sizes = [sum(tokens(m.content) + 4 for m in turn) for turn in turns]
    suffix = [0] * (len(turns) + 1)
    for i in range(len(turns) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + sizes[i]
    start = 0
    while start < len(turns) and suffix[start] > budget:
        start += max(1, step_turns)
    if start >= len(turns):
        # Even the newest block is too big: drop single turns from its start.
        start = max(0, start - max(1, step_turns))
        while start < len(turns) and suffix[start] > budget:
            start += 1
    kept = [message for turn in turns[start:] for message in turn]
    return kept, start
