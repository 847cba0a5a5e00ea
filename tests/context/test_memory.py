from dataclasses import dataclass, replace

from context.memory import (
    Budget,
    baseline_order,
    render,
    render_line,
    select_baseline,
    select_semantic,
    stable_hash,
)
from context.tokens import count_tokens, get_tokenizer
from tests._tokenizer import register_bytes


@dataclass(frozen=True)
class Mem:
    id: str
    type: str = "note"
    scope: str = "global"
    origin: str = "manual"
    content: str = "something"
    updated_at: str = "2026-01-01T00:00:00.000000Z"


def ids(memories):
    return [m.id for m in memories]


def test_baseline_order_is_type_scope_origin_newest_then_id():
    memories = [
        Mem("n1", type="note"),
        Mem("p-learned", type="preference", origin="learned"),
        Mem("p-project", type="preference", scope="project"),
        Mem("p-old", type="preference", updated_at="2026-01-01T00:00:00.000000Z"),
        Mem("p-new", type="preference", updated_at="2026-02-01T00:00:00.000000Z"),
        Mem("i1", type="instruction"),
        Mem("pr1", type="profile"),
        Mem("b-tie", type="note", updated_at="2026-03-01T00:00:00.000000Z"),
        Mem("a-tie", type="note", updated_at="2026-03-01T00:00:00.000000Z"),
    ]
    expected = ["p-new", "p-old", "p-learned", "p-project", "i1", "pr1", "a-tie", "b-tie", "n1"]
    assert ids(baseline_order(memories)) == expected
    assert ids(baseline_order(reversed(memories))) == expected


def test_baseline_budget_by_items_and_tokens():
    memories = [Mem(f"m{i}", content=f"memory number {i}") for i in range(10)]
    assert len(select_baseline(memories, Budget(max_items=3, max_tokens=10_000))) == 3
    one = count_tokens(render_line(memories[0])) + 1
    assert len(select_baseline(memories, Budget(max_items=100, max_tokens=one * 4))) == 4


def test_baseline_tokens_are_counted_with_the_budgets_tokenizer(monkeypatch):
    memories = [Mem(f"m{i}", content=f"memory number {i}") for i in range(10)]
    budget = (count_tokens(render_line(memories[0])) + 1) * 4
    byte_level = get_tokenizer(register_bytes(monkeypatch))
    by_bytes = select_baseline(memories, Budget(max_items=100, max_tokens=budget,
                                                tokenizer=byte_level))
    assert len(by_bytes) == budget // (len(render_line(memories[0]).encode()) + 1) < 4


def test_an_oversized_memory_is_skipped_and_smaller_later_ones_still_fit():
    huge = Mem("a", type="preference", content="word " * 500)
    small = Mem("b", type="note", content="short")
    assert ids(select_baseline([huge, small], Budget(max_items=5, max_tokens=50))) == ["b"]


def test_semantic_drops_baseline_duplicates_and_orders_by_distance_then_baseline_rule():
    baseline = [Mem("in-baseline")]
    hits = [
        (Mem("in-baseline"), 0.01),
        (Mem("far"), 0.5),
        (Mem("tie-note", type="note"), 0.2),
        (Mem("tie-pref", type="preference"), 0.2),
        (Mem("near"), 0.1),
    ]
    chosen = select_semantic(hits, baseline, Budget(max_items=10, max_tokens=10_000))
    assert [m.id for m, _ in chosen] == ["near", "tie-pref", "tie-note", "far"]
    assert [d for _, d in chosen] == [0.1, 0.2, 0.2, 0.5]
    trimmed = select_semantic(hits, baseline, Budget(max_items=2, max_tokens=10_000))
    assert [m.id for m, _ in trimmed] == ["near", "tie-pref"]


def test_render_keeps_a_multiline_memory_one_item():
    multiline = Mem("a", content="line one\n- [note] not a new item")
    text = render([multiline, Mem("b", scope="project")])
    assert text == "- [note] line one\n  - [note] not a new item\n- [note, project] something"


def test_stable_hash_follows_rendered_content_only():
    memories = [Mem("a", content="likes tea"), Mem("b", content="lives in Lyon")]
    same_text_other_ids = [replace(m, id=m.id + "x", updated_at="2027-01-01") for m in memories]
    assert stable_hash(memories) == stable_hash(same_text_other_ids)
    assert stable_hash(memories) != stable_hash([memories[0]])
    assert stable_hash(memories) != stable_hash([replace(memories[0], content="likes coffee"),
                                                 memories[1]])
