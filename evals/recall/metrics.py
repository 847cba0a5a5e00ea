"""recall@k of evidence turns per question, averaged per category, and latency figures.

recall@k is the share of a question's evidence turns among the top k results;
"all@k" is 1 when every one of them is there (what a multi-hop answer needs).
"""

from __future__ import annotations

from evals.recall.locomo import CATEGORIES, SCORED
from evals.reliability.load_bench import percentile
from evals.retrieval.metrics import doc_ranking, recall_at

KS = (5, 10, 20)
OVERALL = "1-4"
SESSION_KS = (5, 10)
ALL_TYPES = "all"


def score(ranking: list[str], evidence: frozenset[str]) -> dict[str, float]:
    """recall@k and all@k of one question, from the dia ids of its results in order."""
    scores = {}
    for k in KS:
        scores[f"recall@{k}"] = recall_at(ranking, evidence, k)
        scores[f"all@{k}"] = float(evidence <= set(ranking[:k]))
    return scores


def by_category(rows: list[tuple[int, dict[str, float]]]) -> dict[str, dict]:
    """Mean scores per category name, plus OVERALL: every question of SCORED."""
    groups = {
        CATEGORIES[c]: [s for cat, s in rows if cat == c]
        for c in sorted(CATEGORIES)
        if any(cat == c for cat, _ in rows)
    }
    groups[OVERALL] = [s for cat, s in rows if cat in SCORED]
    return {name: _mean(scores) for name, scores in groups.items() if scores}


def session_score(ranking: list[str], sessions: list[str], answers: frozenset[str],
                  evidence: frozenset[str]) -> dict[str, float]:
    """One LongMemEval question from its ranked turn ids and their sessions: session
    recall_any@k (an answer session among the first k distinct sessions of the ranking),
    recall_all@10, and turn recall@10 (share of the `has_answer` turns in the top 10;
    left out when the question marks none)."""
    ranked = doc_ranking(sessions)
    scores = {f"session_any@{k}": float(bool(set(ranked[:k]) & answers)) for k in SESSION_KS}
    scores["session_all@10"] = float(answers <= set(ranked[:10]))
    if evidence:
        scores["turn@10"] = recall_at(ranking, evidence, 10)
    return scores


def by_type(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict]:
    """Mean scores per question type and over ALL_TYPES; each mean over the questions
    that have that score (turn@10 only where turns are marked)."""
    groups = {kind: [s for t, s in rows if t == kind] for kind in sorted({t for t, _ in rows})}
    groups[ALL_TYPES] = [s for _, s in rows]
    return {kind: _mean_present(scores) for kind, scores in groups.items() if scores}


def _mean_present(scores: list[dict[str, float]]) -> dict:
    keys = sorted({key for s in scores for key in s})
    means: dict = {"questions": len(scores)}
    for key in keys:
        present = [s[key] for s in scores if key in s]
        means[key] = round(sum(present) / len(present), 4)
    return means


def latency_ms(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50": round(percentile(ms, 0.5), 1),
        "p95": round(percentile(ms, 0.95), 1),
        "max": round(max(ms, default=0.0), 1),
    }


def _mean(scores: list[dict[str, float]]) -> dict:
    keys = scores[0].keys()
    return {
        "questions": len(scores),
        **{key: round(sum(s[key] for s in scores) / len(scores), 4) for key in keys},
    }
