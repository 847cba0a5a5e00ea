"""Measure the fact verifier's thresholds on LoCoMo and its statement rule on the
adversarial set; time it. Writes the "Verifier thresholds" section of
evals/results/extraction_quality.md and evals/results/verifier_thresholds.json.

    python -m evals.extraction.thresholds --locomo ../shared/data/locomo10.zip

The content-word threshold is the highest value on a 0.05 grid that keeps >= 99 % of
the true pairs (observation, its turn) whose numbers and names check out; it is chosen
on the development conversations (26, 30) and then reported on held-out ones (41-43).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from chatsvc.extraction import MIN_COVERAGE, Quote, Shown, support, verify
from evals.extraction import locomo_pairs, statement_rule
from evals.extraction.locomo_pairs import Pair
from evals.extraction.report import render

RESULTS = Path(__file__).resolve().parents[1] / "results"
HEADING = "## Verifier thresholds"
KEEP = 0.99
GRID = [round(0.05 * i, 2) for i in range(21)]
_SENTENCE = re.compile(r"(?<=[.!?])\s+| - ")  # where _statement ends a sentence too


def collect(path: Path, numbers: list[int], seed: int) -> tuple[list[Pair], int]:
    rng = random.Random(seed)
    found, skipped = [], 0
    for number in numbers:
        pairs, dropped = locomo_pairs.pairs(locomo_pairs.load(path, number), number, rng)
        found += pairs
        skipped += dropped
    return found, skipped


def scored(pairs: list[Pair]) -> list[tuple[Pair, bool, float]]:
    """(pair, numbers and names check out, coverage) for each pair."""
    out = []
    for pair in pairs:
        found = support(pair.observation, [t.text for t in pair.turns],
                        ignore_words=[pair.speaker], said_at=[t.said_at for t in pair.turns])
        out.append((pair, not found.missing, found.coverage))
    return out


def rates(scores: list[tuple[Pair, bool, float]], threshold: float) -> dict:
    true = [(ok, cov) for pair, ok, cov in scores if pair.true]
    false = [(ok, cov) for pair, ok, cov in scores if not pair.true]
    checked = [cov for ok, cov in true if ok]
    return {
        "true_pairs": len(true), "false_pairs": len(false),
        "true_names_numbers_ok": _share(len(checked), len(true)),
        "true_kept_of_names_ok": _share(sum(c >= threshold for c in checked), len(checked)),
        "true_kept_all": _share(sum(ok and c >= threshold for ok, c in true), len(true)),
        "false_rejected": _share(sum(not (ok and c >= threshold) for ok, c in false),
                                 len(false)),
        "false_rejected_by_names_numbers": _share(sum(not ok for ok, _ in false), len(false)),
    }


def choose(scores: list[tuple[Pair, bool, float]]) -> float:
    checked = [cov for pair, ok, cov in scores if pair.true and ok]
    good = [t for t in GRID if sum(c >= t for c in checked) >= KEEP * len(checked)]
    return max(good)


def sentence_verdicts(pairs: list[Pair]) -> dict[str, int]:
    """Full verify of each single-turn true pair, citing the turn's best sentence (the one
    with the most coverage): what an extractor quoting one sentence would get."""
    reasons = Counter()
    for pair in (p for p in pairs if p.true and len(p.turns) == 1):
        turn = pair.turns[0]
        sentences = [s for s in _SENTENCE.split(turn.text) if s.strip()]
        best = max(sentences, key=lambda s: support(pair.observation, [s],
                                                     ignore_words=[pair.speaker]).coverage)
        shown = {"m1": Shown("m1", "user", turn.text, turn.said_at)}
        verdict = verify(pair.observation, [Quote("m1", best)], shown,
                         ignore_words=[pair.speaker])
        reasons[_kind(verdict)] += 1
    return dict(reasons)


def _kind(verdict) -> str:
    """The reason with the rule's family ("unsupported: coverage"), for the report."""
    if verdict.reason is None:
        return "kept"
    family = re.sub(r"[\d.<]+| in m\d+", "", verdict.detail).strip()
    return f"{verdict.reason}: {family}" if family else verdict.reason


def bench(pairs: list[Pair], rounds: int) -> dict:
    """Time per verify() call, citing the whole turn(s) of each pair."""
    calls = []
    for pair in pairs:
        shown = {f"m{i}": Shown(f"m{i}", "user", t.text, t.said_at)
                 for i, t in enumerate(pair.turns, start=1)}
        evidence = [Quote(f"m{i}", t.text) for i, t in enumerate(pair.turns, start=1)]
        calls.append((pair.observation, evidence, shown, [pair.speaker]))
    wall, cpu = [], []
    for _ in range(rounds):
        for fact, evidence, shown, ignore in calls:
            began, began_cpu = time.perf_counter(), time.thread_time()
            verify(fact, evidence, shown, ignore_words=ignore)
            cpu.append((time.thread_time() - began_cpu) * 1000)
            wall.append((time.perf_counter() - began) * 1000)
    # On a shared machine the wall clock also counts waits for a core; CPU time does not.
    return {"calls": len(wall), "wall": _spread(wall), "cpu": _spread(cpu),
            "loadavg": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}


def _spread(millis: list[float]) -> dict:
    millis = sorted(millis)
    return {"mean_ms": round(statistics.fmean(millis), 3),
            "p99_ms": round(millis[int(0.99 * (len(millis) - 1))], 3),
            "max_ms": round(millis[-1], 3)}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True,
                        help="locomo10.zip, or the folder holding <N>.json")
    parser.add_argument("--develop", default="26,30")
    parser.add_argument("--held-out", default="41,42,43")
    parser.add_argument("--adversarial", type=Path, default=statement_rule.ADVERSARIAL)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--rounds", type=int, default=3, help="benchmark passes")
    args = parser.parse_args(argv)
    develop = [int(n) for n in args.develop.split(",") if n]
    held_out = [int(n) for n in args.held_out.split(",") if n]
    dev_pairs, dev_skipped = collect(args.locomo, develop, args.seed)
    held_pairs, held_skipped = collect(args.locomo, held_out, args.seed)
    dev_scores, held_scores = scored(dev_pairs), scored(held_pairs)
    threshold = choose(dev_scores)
    report = {
        "threshold": threshold, "in_code": MIN_COVERAGE, "keep_target": KEEP,
        "develop": {"conversations": develop, "skipped_observations": dev_skipped,
                    **rates(dev_scores, threshold)},
        "held_out": {"conversations": held_out, "skipped_observations": held_skipped,
                     **rates(held_scores, threshold)},
        "curve": {str(t): rates(dev_scores, t) for t in GRID},
        "best_sentence_verdicts": sentence_verdicts(dev_pairs),
        "benchmark": bench(dev_pairs, args.rounds),
        "statement_rule": statement_rule.measure(args.adversarial),
    }
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "verifier_thresholds.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    write_section(args.results / "extraction_quality.md", section(report))
    print(section(report))


def write_section(path: Path, text: str) -> None:
    """Replace this script's section of the file (or add it), leaving others alone."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Extraction quality\n"
    pattern = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.M | re.S)
    new = pattern.sub(lambda _: text, old) if pattern.search(old) else \
        old.rstrip("\n") + "\n\n" + text
    path.write_text(new, encoding="utf-8")


def section(report: dict) -> str:
    return render(report, HEADING)


if __name__ == "__main__":
    main()
