"""Layer labelling of request bodies and the cause + byte offset of every miss.

The bodies are built with the real `context.assemble`, exactly as the chat sends them.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from itertools import pairwise

import pytest

from context import (
    Budgets,
    Dynamic,
    FactHit,
    MemoryItem,
    Message,
    SheetFact,
    Snapshot,
    Snippet,
    assemble,
)
from evals.cache.attribution import attribute, first_difference
from evals.cache.prompt import STABLE_LAYERS, parse

SNAPSHOT = Snapshot(
    taken_at=datetime(2026, 11, 21, 8, 0, tzinfo=UTC),
    fact_sheet_id="sheet-1",
    fact_sheet=(SheetFact("f1", "core", "Lives in Lisbon", 0),
                SheetFact("f2", "technical", "Writes Python daily", 1)),
    recent_conversations=(),
    memory=(MemoryItem("m1", "preference", "Answer briefly"),),
    docs=(),
)
TODAY = date(2026, 11, 21)
HISTORY = [Message("user", "hi"), Message("assistant", "hello")]
DEFAULT_BUDGETS = Budgets()


def rag(text: str) -> Dynamic:
    return Dynamic(facts=(FactHit("f9", "project", text, 0.3),),
                   snippets=(Snippet("k1", "README", "chatsvc streams over SSE.", 0.1),))


def body(strategy="before_conversation", *, snapshot=SNAPSHOT, today=TODAY, dynamic=None,
         history=HISTORY, current="what now?", budgets=DEFAULT_BUDGETS):
    return assemble(snapshot=snapshot, today=today, timezone="Europe/Lisbon",
                    dynamic=dynamic or rag("Builds chatsvc"), history=history,
                    current=current, strategy=strategy, budgets=budgets).messages


def next_turn(history, question, answer):
    return [*history, Message("user", question), Message("assistant", answer)]


def test_layers_cover_the_request_in_order():
    prompt = parse(body())
    layers = [s.layer for s in prompt.segments]
    assert layers == ["system", "date", "fact_sheet", "memory", "message_context",
                      "message_context", "history", "history", "current"]
    assert prompt.data.decode().startswith("<|system|>You are a helpful assistant")
    assert prompt.segments[-1].end == len(prompt.data)
    assert prompt.stable_tokens == prompt.message_ends[0] == prompt.stable_end
    assert prompt.context_start == prompt.message_ends[0]


def test_system_rag_puts_the_block_inside_the_first_message():
    prompt = parse(body("system_rag"))
    assert [s.layer for s in prompt.segments][:5] == [
        "system", "date", "fact_sheet", "memory", "message_context"]
    assert all(s.message == 0 for s in prompt.segments[:5])
    assert prompt.stable_end == 0 and prompt.context_start is None
    assert 0 < prompt.stable_tokens < prompt.message_ends[0]


def test_extension_is_no_miss():
    first = parse(body(dynamic=rag("same")))
    second = parse(body(dynamic=rag("same"), history=next_turn(HISTORY, "what now?", "this"),
                        current="and then?"))
    assert first_difference(first.data, second.data) is None
    assert attribute(first, second) is None


def test_per_message_block_miss_with_offset():
    first = parse(body(dynamic=rag("Builds chatsvc")))
    second = parse(body(dynamic=rag("Plays chess"), history=next_turn(HISTORY, "what now?", "x")))
    miss = attribute(first, second)
    assert miss.cause == "per-message block" and miss.layer == "message_context"
    assert first.data[: miss.byte_offset] == second.data[: miss.byte_offset]
    assert first.data[miss.byte_offset] != second.data[miss.byte_offset]
    assert second.data[miss.byte_offset:].startswith(b"Plays")


@pytest.mark.parametrize(("change", "cause", "layer"), [
    ({"today": date(2026, 11, 22)}, "date rollover", "date"),
    ({"snapshot": replace(SNAPSHOT, fact_sheet=(
        *SNAPSHOT.fact_sheet, SheetFact("f3", "core", "Has a cat", 2)))},
     "fact sheet regenerated", "fact_sheet"),
    ({"snapshot": replace(SNAPSHOT, memory=(
        *SNAPSHOT.memory, MemoryItem("m2", "instruction", "Use metric units")))},
     "memory write", "memory"),
])
def test_stable_layer_changes_are_named(change, cause, layer):
    first = parse(body())
    second = parse(body(**change, history=next_turn(HISTORY, "what now?", "x")))
    miss = attribute(first, second)
    assert (miss.cause, miss.layer) == (cause, layer)
    segment = next(s for s in first.segments if s.layer == layer)
    assert miss.byte_offset == segment.start + miss.layer_offset
    assert miss.layer in STABLE_LAYERS


def test_history_trim_is_named_under_before_last_user():
    long_history = []
    for i in range(10):
        long_history = next_turn(long_history, f"question {i} " + "word " * 60, f"answer {i}")
    budgets = Budgets(history=700, history_refill=0.5)
    # 9 turns fit; the 10th overflows and the 6 oldest go (down to half the budget).
    first = parse(body("before_last_user", history=long_history[:-2], budgets=budgets))
    second = parse(body("before_last_user", history=long_history, budgets=budgets))
    assert "question 0 " in first.messages[1]["content"]
    assert "question 6 " in second.messages[1]["content"]
    miss = attribute(first, second)
    assert (miss.cause, miss.layer, miss.new_layer) == ("history trim", "history", "history")


def test_before_last_user_misses_at_the_previous_block():
    first = parse(body("before_last_user"))
    second = parse(body("before_last_user", history=next_turn(HISTORY, "what now?", "x")))
    miss = attribute(first, second)
    assert (miss.layer, miss.new_layer) == ("message_context", "history")
    block = next(s.start for s in first.segments if s.layer == "message_context")
    assert miss.byte_offset == block + len("<|user|>")  # both messages are user messages


def test_in_history_labels_kept_blocks_as_history_and_names_the_trim():
    budgets = Budgets(history=700, message_context=200, history_refill=0.5)
    history, requests = [], []
    for i in range(14):
        result = assemble(snapshot=SNAPSHOT, today=TODAY, timezone="Europe/Lisbon",
                          dynamic=rag(f"fact {i}"), history=history, current=f"q{i}",
                          strategy="in_history", budgets=budgets)
        requests.append((result.dropped_turns, parse(result.messages, blocks_in_history=True)))
        history = [*history, Message("user", f"q{i}", result.retained_context),
                   Message("assistant", f"answer {i} " + "word " * 60)]
    # Only the block before the current message is this turn's.
    layers = [s.layer for s in requests[-1][1].segments]
    assert layers[-3:] == ["message_context", "message_context", "current"]
    assert "message_context" not in layers[:-3] and layers.count("history") > 4
    causes = [(dropped != before, attribute(previous, prompt))
              for (before, previous), (dropped, prompt) in pairwise(requests)]
    assert any(moved for moved, _ in causes)
    for moved, miss in causes:
        # Append-only between trims; a moved trim is named as such.
        assert (miss.cause if miss else None) == ("history trim" if moved else None)
