"""Budgets: whole items, whole turns, trimming down to a low-water mark."""

from __future__ import annotations

from context.budget import fit_lines, split_turns, tokens, trim_history
from context.layers import Message


def turn(i: int, words: int = 40) -> list[Message]:
    return [Message("user", f"question {i} " + "word " * words),
            Message("assistant", f"answer {i} " + "word " * words)]


def history(n: int) -> list[Message]:
    return [m for i in range(n) for m in turn(i)]


def test_fit_lines_keeps_a_prefix_within_budget():
    lines = [f"line {i}" for i in range(50)]
    kept = fit_lines(lines, 40)
    assert kept == lines[: len(kept)] and 0 < len(kept) < 50
    assert sum(tokens(line) + 1 for line in kept) <= 40
    assert fit_lines(lines, 40, overhead=40) == []


def test_split_turns_starts_each_turn_at_a_user_message():
    messages = [Message("assistant", "greeting"), *history(2)]
    turns = split_turns(messages)
    assert [len(t) for t in turns] == [1, 2, 2]


def test_history_within_budget_is_untouched():
    kept, dropped = trim_history(history(3), 10_000, 0.5)
    assert kept == history(3) and dropped == 0


def test_trim_drops_whole_oldest_turns_down_to_the_low_water_mark():
    per_turn = sum(tokens(m.content) + 4 for m in turn(0))
    budget = per_turn * 20
    kept, dropped = trim_history(history(21), budget, 0.5)
    assert dropped == 11  # down to half the budget, not just the one turn that overflowed
    assert kept[0].content.startswith("question 11 ") and kept[-1].content.startswith("answer 20")
    assert len(kept) % 2 == 0


def test_trim_start_moves_rarely_as_the_conversation_grows():
    per_turn = sum(tokens(m.content) + 4 for m in turn(0))
    budget = per_turn * 20
    starts = [trim_history(history(n), budget, 0.5)[1] for n in range(1, 41)]
    assert starts == sorted(starts)  # never moves back
    assert sorted(set(starts)) == [0, 11, 22]  # two cache breaks over 40 turns


def test_a_single_turn_larger_than_the_budget_is_dropped_alone():
    messages = history(3) + turn(3, words=5000)
    kept, dropped = trim_history(messages, 2000, 0.5)
    assert kept == [] and dropped == 4
    kept, dropped = trim_history(history(3) + turn(3, words=5000) + turn(4), 2000, 0.5)
    assert [m.content.split()[1] for m in kept] == ["4", "4"] and dropped == 4
