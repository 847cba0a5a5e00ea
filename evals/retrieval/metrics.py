"""recall@k and reciprocal rank over documents (chunks deduplicated to their document)."""

from __future__ import annotations


def doc_ranking(chunk_docs: list[str]) -> list[str]:
    seen: list[str] = []
    for doc in chunk_docs:
        if doc not in seen:
            seen.append(doc)
    return seen


def recall_at(ranking: list[str], relevant: frozenset[str], k: int = 5) -> float:
    return len(set(ranking[:k]) & relevant) / len(relevant)


def reciprocal_rank(ranking: list[str], relevant: frozenset[str]) -> float:
    for rank, doc in enumerate(ranking, start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def summarise(rows: list[tuple[float, float]]) -> dict:
    n = len(rows)
    return {"queries": n, "recall@5": round(sum(r for r, _ in rows) / n, 4),
            "mrr": round(sum(m for _, m in rows) / n, 4)}
