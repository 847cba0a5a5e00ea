"""python -m evals.hnsw_sweep [--size 100000] [--datasets 2] [--graphs 16:64,16:48,...]
                            [--ef-search 100,150,200] [--queries 200]

What each pgvector HNSW graph (m, ef_construction) costs to build and gives back: build
seconds, recall@10 against exact search and p50 query latency at each ef_search. One
`halfvec(768)` table in a throwaway PostgreSQL (the shipped vector type, `maintenance_work_mem`
and parallel build settings), the clustered vectors and near-duplicate queries of
evals/knowledge_bench.py; `--datasets` other seeds of the same size, since recall varies
from one graph to the next. Results: evals/results/hnsw_sweep.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import psycopg

from chatsvc.testing.postgres import SERVING, running_server  # pgserver: a dev extra
from evals._machine import describe
from evals.knowledge_bench import RESULTS, make_data
from store.pg import BUILD_SETTINGS


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def load(conn: psycopg.Connection, vectors: np.ndarray) -> None:
    conn.execute("DROP TABLE IF EXISTS sweep")
    conn.execute(f"CREATE TABLE sweep (id int PRIMARY KEY, embedding halfvec({vectors.shape[1]}))")
    with conn.cursor().copy("COPY sweep (id, embedding) FROM STDIN") as copy:
        for i, vector in enumerate(vectors):
            copy.write_row((i, literal(vector)))
    conn.execute("VACUUM ANALYZE sweep")


def build(conn: psycopg.Connection, m: int, ef_construction: int) -> float:
    conn.execute("DROP INDEX IF EXISTS sweep_hnsw")
    for setting, value in BUILD_SETTINGS.items():
        conn.execute(f"SET {setting} = '{value}'")
    started = time.perf_counter()
    conn.execute("CREATE INDEX sweep_hnsw ON sweep USING hnsw (embedding halfvec_cosine_ops) "
                 f"WITH (m = {m}, ef_construction = {ef_construction})")
    return time.perf_counter() - started


def searched(conn: psycopg.Connection, queries: list[str], exact: list[set[int]],
             ef_search: int) -> dict:
    """recall@10 and p50 ms; the queries run twice, the second round timed."""
    conn.execute(f"SET hnsw.ef_search = {ef_search}")
    for _round in range(2):
        times, recalls = [], []
        for query, truth in zip(queries, exact, strict=True):
            started = time.perf_counter()
            rows = conn.execute("SELECT id FROM sweep ORDER BY embedding <=> %s::halfvec "
                                "LIMIT 10", (query,)).fetchall()
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(len(truth & {row[0] for row in rows}) / 10)
    return {"ef_search": ef_search, "recall_at_10": round(statistics.mean(recalls), 4),
            "p50_ms": round(statistics.median(times), 2)}


def run(args) -> list[dict]:
    rows = []
    with running_server(SERVING) as url, psycopg.connect(url, autocommit=True) as conn:
        for dataset in range(args.datasets):
            vectors, _, queries, _ = make_data(args.size + dataset, args.queries)  # seed = size
            queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
            exact = [set(np.argsort(-(vectors @ q), kind="stable")[:10].tolist())
                     for q in queries]
            load(conn, vectors)
            texts = [literal(q) for q in queries]
            for m, ef_construction in args.graphs:
                seconds = build(conn, m, ef_construction)
                for ef_search in args.ef_search:
                    rows.append({"dataset": dataset, "m": m, "ef_construction": ef_construction,
                                 "build_s": round(seconds, 1),
                                 **searched(conn, texts, exact, ef_search)})
                    print(rows[-1], flush=True)
    return rows


def markdown(result: dict) -> str:
    lines = ["# pgvector HNSW build sweep", "", result["note"], "",
             "| dataset | m | ef_construction | build s | ef_search | recall@10 | p50 ms |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {r['m']} | {r['ef_construction']} | {r['build_s']} | "
              f"{r['ef_search']} | {r['recall_at_10']} | {r['p50_ms']} |" for r in result["rows"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--datasets", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--graphs", default="16:64,16:48,20:48,16:32,12:40",
                        type=lambda s: [tuple(map(int, g.split(":"))) for g in s.split(",")])
    parser.add_argument("--ef-search", default="100,150,200",
                        type=lambda s: [int(v) for v in s.split(",")])
    args = parser.parse_args()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = run(args)
    note = (f"{describe()}, {stamp}. {args.size} vectors of 768-d per dataset, "
            f"{args.queries} queries, build settings {BUILD_SETTINGS}, PostgreSQL "
            f"{SERVING}.")
    result = {"note": note, "rows": rows}
    (RESULTS / "hnsw_sweep.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "hnsw_sweep.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
