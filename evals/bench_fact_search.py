"""Fact search latency: one user with 1k / 10k / 100k facts at 768-d.

Query paths over the same sqlite-vec `fact_vec` table:

* chatsvc  - `Facts.search_by_vector`: KNN over the user's in-memory index of
             `fact_vec` (store/sqlite/_vecindex.py: sign bits select 400 candidates,
             float32 cosine orders them), then one query for the live facts (live
             filter, content hash, mention_count, last_extracted_at).
* cold     - the first chatsvc query of a fresh `Facts` (one sample): it loads the
             user's snapshot file (5,000 facts or more, written by the first load) or
             the vectors out of vec0. After a write by any process the next search
             applies the changed rows only: `python -m evals.refresh_bench` measures
             that, with recall@10 on clustered vectors (these are uniform random).
* seed     - sqlite-vec's own KNN (the seed design's, and chatsvc's before the
             in-memory copy): `MATCH ? AND user_id = ? ORDER BY distance LIMIT ?`,
             max_distance applied in Python, then a second query for the details.

Embedding time is not included (vectors are random, queries are noisy copies of
stored vectors so that each query has close neighbours under max_distance=1.0).

    python -m evals.bench_fact_search [--sizes 1000,10000,100000] [--queries 50]

Writes evals/results/fact_search_latency.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from array import array
from pathlib import Path

import numpy as np

from evals._machine import describe
from store import Database, Facts, SqliteDatabase, Users
from store.contract import EmbedJob
from store.facts import content_hash

DIM = 768
LIMIT = 10
MAX_DISTANCE = 1.0
RESULTS = Path(__file__).parent / "results"

# The seed's KNN query, verbatim apart from names; details are fetched afterwards.
SEED_KNN = (
    "SELECT fv.fact_id, fv.distance FROM fact_vec fv "
    "WHERE fv.embedding MATCH ? AND fv.user_id = ? ORDER BY fv.distance LIMIT ?"
)
SEED_DETAILS = (
    "SELECT f.id, f.fact, f.category, (SELECT max(e.extracted_at) FROM fact_extractions e "
    "WHERE e.fact_id = f.id) AS last_extracted_at FROM facts f WHERE f.id IN ({marks})"
)


def populate(db: Database, size: int, rng: np.random.Generator) -> tuple[str, np.ndarray, float]:
    users, facts = Users(db), Facts(db)
    user_id = users.add(f"bench-{size}")[0].id
    vectors = rng.standard_normal((size, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    started = time.perf_counter()
    batch: list[tuple[EmbedJob, list[float]]] = []
    for i in range(size):
        text = f"fact {i}: the user likes topic {i % 997} and place {i % 101}"
        fact = facts.create(user_id, category="core", fact=text)
        batch.append((EmbedJob(fact.id, text, content_hash(text)), vectors[i]))
        if len(batch) == 1000:
            facts.save_embeddings(batch)
            batch = []
    if batch:
        facts.save_embeddings(batch)
    return user_id, vectors, time.perf_counter() - started


def seed_search(db: Database, user_id: str, query: np.ndarray) -> list[tuple]:
    conn = db.connection()
    blob = array("f", query.tolist()).tobytes()
    hits = [(row[0], row[1]) for row in conn.execute(SEED_KNN, (blob, user_id, LIMIT))
            if row[1] <= MAX_DISTANCE]
    if not hits:
        return []
    marks = ",".join("?" * len(hits))
    details = {row[0]: row for row in conn.execute(SEED_DETAILS.format(marks=marks),
                                                   [h[0] for h in hits])}
    return [(details[fid], distance) for fid, distance in hits]


def timed(fn, queries: np.ndarray) -> dict:
    for query in queries[:5]:  # warm the page cache
        fn(query)
    samples = []
    for query in queries:
        started = time.perf_counter()
        found = fn(query)
        samples.append((time.perf_counter() - started) * 1000)
        assert found, "every query has a close neighbour"
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 2),
            "mean_ms": round(statistics.fmean(samples), 2), "queries": len(samples)}


def run_size(size: int, n_queries: int, rng: np.random.Generator) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = SqliteDatabase(Path(tmp) / "bench.sqlite3", embed_model="bench-768", embed_dim=DIM)
        try:
            user_id, vectors, setup_s = populate(db, size, rng)
            picks = vectors[rng.integers(0, size, n_queries)]
            queries = picks + 0.02 * rng.standard_normal(picks.shape, dtype=np.float32)
            facts = Facts(db)
            ours = timed(lambda q: facts.search_by_vector(
                user_id, q.tolist(), limit=LIMIT, max_distance=MAX_DISTANCE), queries)
            seed = timed(lambda q: seed_search(db, user_id, q), queries)
            started = time.perf_counter()
            Facts(db).search_by_vector(user_id, queries[0].tolist(), limit=LIMIT)
            cold_ms = round((time.perf_counter() - started) * 1000, 1)
            size_mb = (Path(tmp) / "bench.sqlite3").stat().st_size / 1e6
        finally:
            db.close()
    return {"facts": size, "dim": DIM, "limit": LIMIT, "setup_seconds": round(setup_s, 1),
            "db_mb": round(size_mb, 1), "chatsvc": ours, "seed_plain_knn": seed,
            "chatsvc_cold_ms": cold_ms}


def write(results: list[dict], load_before: float) -> None:
    RESULTS.mkdir(exist_ok=True)
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    meta = {"machine": f"{describe()}; {load}",
            "python": platform.python_version(), "sqlite_vec": "v0.1.9",
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (RESULTS / "fact_search_latency.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    lines = [
        "# Fact search latency (one user, 768-d, top 10, max_distance 1.0)",
        "",
        f"Measured {meta['when']} on {meta['machine']}. Embedding time excluded.",
        "",
        "* `chatsvc`: `Facts.search_by_vector` (sign-bit candidates + float32 rescoring "
        "over the user's in-memory index, then the live facts)",
        "* `seed`: sqlite-vec's float KNN (`ORDER BY distance LIMIT`) + a details query "
        "(chatsvc's path before the in-memory copy)",
        "* `cold`: chatsvc's first query on a fresh `Facts` (a restart): it loads the "
        "user's snapshot file, or the vectors from vec0 below 5,000 facts",
        "",
        "| facts | chatsvc p50 | chatsvc p95 | seed p50 | seed p95 | cold | setup | db size |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cells = [f"{r[k][p]} ms" for k in ("chatsvc", "seed_plain_knn")
                 for p in ("p50_ms", "p95_ms")]
        lines.append(f"| {r['facts']:,} | {' | '.join(cells)} | {r['chatsvc_cold_ms']} ms | "
                     f"{r['setup_seconds']} s | {r['db_mb']} MB |")
    (RESULTS / "fact_search_latency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    load_before = os.getloadavg()[0]
    results = [run_size(int(s), args.queries, rng) for s in args.sizes.split(",")]
    write(results, load_before)


if __name__ == "__main__":
    main()
