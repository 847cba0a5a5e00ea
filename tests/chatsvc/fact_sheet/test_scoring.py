"""Scoring and assembly of the fact sheet, table-driven, with a fixed clock."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from chatsvc.fact_sheet import (
    CATEGORIES,
    Candidate,
    SheetEntry,
    assemble,
    build_sheet,
    canonical_json,
    decay_points,
    reference_scores,
    score_facts,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
H, D, S = timedelta(hours=1), timedelta(days=1), timedelta(seconds=1)


@pytest.mark.parametrize(
    ("age", "points"),
    [
        (-5 * 60 * S, 10), (0 * S, 10), (H - S, 10),
        (H, 8), (6 * H - S, 8),
        (6 * H, 6), (24 * H - S, 6),
        (D, 4), (3 * D - S, 4),
        (3 * D, 3), (7 * D - S, 3),
        (7 * D, 2), (14 * D - S, 2),
        (14 * D, 1), (30 * D - S, 1),
        (30 * D, 0.5), (400 * D, 0.5),
    ],
)
def test_decay_points_by_age(age, points):
    assert decay_points(age) == points


@pytest.mark.parametrize(
    ("ages", "expected"),
    [
        ([0 * H, 0 * H, 0 * H], 30),  # three mentions today
        ([15 * D], 1),  # one mention two weeks ago
        ([30 * H, 2 * H, 40 * D], 4 + 8 + 0.5),
        ([], None),
    ],
)
def test_reference_score_sums_points(ages, expected):
    scores = reference_scores([("f", NOW - age) for age in ages], NOW)
    assert scores.get("f") == expected


@pytest.mark.parametrize(("category", "weight"),
                         [("core", 10), ("technical", 6), ("project", 4), ("transient", 2)])
def test_score_is_weight_times_reference(category, weight):
    [entry] = score_facts([Candidate("a", category, "x")], {"a": 2.5})
    assert entry.score == weight * 2.5
    [unreferenced] = score_facts([Candidate("b", category, "y")], {})
    assert unreferenced.score == 0


def _entries(counts: dict[str, int], rank: list[str]) -> list[SheetEntry]:
    """`counts[c]` facts per category; categories earlier in `rank` score higher, and
    within a category facts score higher the lower their index."""
    entries = []
    for category, count in counts.items():
        base = 1000 * (len(rank) - rank.index(category)) if category in rank else 0
        entries += [SheetEntry(f"{category}-{i:03d}", category, f"fact {i}", float(base + 500 - i))
                    for i in range(count)]
    return entries


ALL = {"core": 60, "technical": 60, "project": 60, "transient": 60}


@pytest.mark.parametrize(
    ("counts", "rank", "expected"),
    [
        # Best scores in category order: core, technical, project fill their caps,
        # transient keeps its minimum; 30 + 25 + 25 + 20 = the 100 cap.
        (ALL, ["core", "technical", "project", "transient"],
         {"core": 30, "technical": 25, "project": 25, "transient": 20}),
        # Transient best: it hits its cap (40) and the rest goes by score.
        (ALL, ["transient", "core", "technical", "project"],
         {"core": 30, "technical": 25, "project": 5, "transient": 40}),
        # Project worst: it still gets its minimum of 3.
        (ALL, ["core", "transient", "technical", "project"],
         {"core": 30, "technical": 25, "project": 5, "transient": 40}),
        (ALL, ["technical", "core", "transient", "project"],
         {"core": 30, "technical": 25, "project": 5, "transient": 40}),
        # Few facts: everything fits.
        ({"core": 2, "technical": 1, "project": 0, "transient": 5}, [],
         {"core": 2, "technical": 1, "transient": 5}),
        # Core unreferenced (score 0) still gets its minimum, then fills after the cap
        # of the high-scoring technical facts.
        ({"core": 10, "technical": 100}, ["technical"], {"core": 10, "technical": 25}),
        # Core everywhere: capped at 30; transient minimum 20 then up to its cap of 40.
        ({"core": 100, "transient": 50}, ["core", "transient"], {"core": 30, "transient": 40}),
        ({"core": 100, "transient": 50}, ["transient", "core"], {"core": 30, "transient": 40}),
    ],
)
def test_assembly_limits(counts, rank, expected):
    sheet = assemble(_entries(counts, rank))
    assert Counter(e.category for e in sheet) == Counter(expected)
    assert len(sheet) <= 100


def test_minimums_are_the_best_of_their_category():
    # Transient scores lowest everywhere but keeps its 20 best.
    sheet = assemble(_entries(ALL, ["core", "technical", "project", "transient"]))
    transient = [e.id for e in sheet if e.category == "transient"]
    assert transient == [f"transient-{i:03d}" for i in range(20)]


def test_total_is_capped_at_100():
    sheet = assemble(_entries({c: 200 for c in CATEGORIES}, list(CATEGORIES)))
    assert len(sheet) == 100


def test_order_is_category_then_score_then_id():
    entries = [
        SheetEntry("b", "transient", "t", 50.0),
        SheetEntry("z", "core", "c1", 10.0),
        SheetEntry("a", "core", "c2", 10.0),
        SheetEntry("m", "core", "c3", 90.0),
        SheetEntry("c", "project", "p", 80.0),
        SheetEntry("d", "technical", "t", 0.0),
    ]
    assert [e.id for e in assemble(entries)] == ["m", "a", "z", "d", "c", "b"]


def test_ties_are_broken_by_id_whatever_the_input_order():
    # 40 core facts with equal scores: the cap (30) keeps the 30 lowest ids.
    entries = [SheetEntry(f"id{i:02d}", "core", "same", 7.0) for i in range(40)]
    expected = [f"id{i:02d}" for i in range(30)]
    for seed in range(5):
        shuffled = entries[:]
        random.Random(seed).shuffle(shuffled)
        assert [e.id for e in assemble(shuffled)] == expected


def test_build_sheet_end_to_end_and_canonical_json():
    candidates = [Candidate("f1", "core", "Name is Ana"), Candidate("f2", "transient", "Tired"),
                  Candidate("f3", "technical", "Uses Rust")]
    records = [("f1", NOW - 2 * H), ("f2", NOW - 10 * 60 * S), ("f2", NOW - 10 * D),
               ("f3", NOW - 40 * D), ("gone", NOW)]
    sheet = build_sheet(candidates, records, NOW)
    assert [(e.id, e.score) for e in sheet] == [("f1", 80.0), ("f3", 3.0), ("f2", 24.0)]
    text = canonical_json(sheet)
    assert text.startswith('[{"category":"core","fact":"Name is Ana","id":"f1","score":80.0}')
    assert canonical_json(build_sheet(list(reversed(candidates)), records[::-1], NOW)) == text
