"""Fact sheet scoring and assembly: pure functions, no I/O, the clock is an argument.

score = category weight x reference score, where the reference score sums, over the
fact's extraction records among the user's most recent ones, points that decay with
the record's age. Assembly keeps the top MAX_FACTS with per-category minimums and
caps. Every ordering ends in the fact id, so equal inputs give equal sheets.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from store.facts import CATEGORIES  # also the sheet order

CATEGORY_WEIGHTS = {"core": 10, "technical": 6, "project": 4, "transient": 2}
# category -> (guaranteed minimum, cap)
CATEGORY_LIMITS = {"core": (5, 30), "technical": (3, 25), "project": (3, 25), "transient": (20, 40)}
MAX_FACTS = 100
RECENT_EXTRACTIONS = 1200
# (age below, points); anything older scores OLDEST_POINTS.
DECAY_STEPS = (
    (timedelta(hours=1), 10.0),
    (timedelta(hours=6), 8.0),
    (timedelta(hours=24), 6.0),
    (timedelta(days=3), 4.0),
    (timedelta(days=7), 3.0),
    (timedelta(days=14), 2.0),
    (timedelta(days=30), 1.0),
)
OLDEST_POINTS = 0.5


@dataclass(frozen=True)
class Candidate:
    """An active (not superseded) fact that may enter the sheet."""

    id: str
    category: str
    fact: str


@dataclass(frozen=True)
class SheetEntry:
    id: str
    category: str
    fact: str
    score: float


def decay_points(age: timedelta) -> float:
    """Points one extraction record of this age is worth (future times count as new)."""
    for below, points in DECAY_STEPS:
        if age < below:
            return points
    return OLDEST_POINTS


def reference_scores(records: Iterable[tuple[str, datetime]], now: datetime) -> dict[str, float]:
    """fact id -> summed decay points of its (fact_id, extracted_at) records."""
    scores: dict[str, float] = defaultdict(float)
    for fact_id, extracted_at in records:
        scores[fact_id] += decay_points(now - extracted_at)
    return dict(scores)


def score_facts(candidates: Iterable[Candidate], refs: dict[str, float]) -> list[SheetEntry]:
    """Every candidate with its score; facts never referenced score 0."""
    return [
        SheetEntry(c.id, c.category, c.fact, CATEGORY_WEIGHTS[c.category] * refs.get(c.id, 0.0))
        for c in candidates
    ]


def _rank(entry: SheetEntry) -> tuple[float, str]:
    return (-entry.score, entry.id)


def assemble(scored: Iterable[SheetEntry], *, max_facts: int = MAX_FACTS) -> list[SheetEntry]:
    """Minimums per category first, then the best of the rest under each cap, up to
    `max_facts`; ordered by category, score desc, id."""
    groups: dict[str, list[SheetEntry]] = {c: [] for c in CATEGORIES}
    for entry in scored:
        groups[entry.category].append(entry)
    chosen: dict[str, list[SheetEntry]] = {}
    rest: list[SheetEntry] = []
    for category, entries in groups.items():
        entries.sort(key=_rank)
        minimum, _ = CATEGORY_LIMITS[category]
        chosen[category] = entries[:minimum]
        rest.extend(entries[minimum:])
    total = sum(len(entries) for entries in chosen.values())
    for entry in sorted(rest, key=_rank):
        if total >= max_facts:
            break
        if len(chosen[entry.category]) < CATEGORY_LIMITS[entry.category][1]:
            chosen[entry.category].append(entry)
            total += 1
    return [entry for category in CATEGORIES for entry in sorted(chosen[category], key=_rank)]


def build_sheet(
    candidates: Iterable[Candidate],
    records: Iterable[tuple[str, datetime]],
    now: datetime,
) -> list[SheetEntry]:
    """The sheet for these candidates and the user's recent extraction records."""
    return assemble(score_facts(candidates, reference_scores(records, now)))


def canonical_json(entries: Iterable[SheetEntry]) -> str:
    """facts_json: sorted keys, fixed separators, so unchanged sheets are byte-identical."""
    return json.dumps(
        [asdict(e) for e in entries], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
