"""Memory injection latency: baseline + semantic recall for one user, per message.

Measures `MemoryService.injection` with a precomputed query vector (the
chat turn reuses its one query embedding), so embedding time is excluded; real
SQLite + sqlite-vec, random unit vectors at the local model's 384 dimensions.
Writes evals/results/memory_injection.{json,md}.

    python -m evals.memory_bench [--sizes 100 1000 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from chatsvc import Services, Settings
from chatsvc.embeddings import LOCAL_DIM, LocalEmbedder
from context.memory import Budget, select_baseline
from evals._machine import describe

RESULTS = Path(__file__).parent / "results"
TYPES = ("preference", "instruction", "profile", "note")


def unit_vector(rng: random.Random) -> list[float]:
    values = [rng.gauss(0, 1) for _ in range(LOCAL_DIM)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def seed(services: Services, user_id: str, count: int, rng: random.Random) -> None:
    for i in range(count):
        project = rng.random() < 0.3
        services.stores.memories.create(
            user_id, type=TYPES[i % 4], scope="project" if project else "global",
            project_id=f"p{i % 5}" if project else None,
            content=f"memory {i}: the user mentioned detail number {i} about topic {i % 37}",
            embedding=unit_vector(rng),
        )


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


async def measure(services: Services, user_id: str, queries: int, rng: random.Random) -> dict:
    vectors = [unit_vector(rng) for _ in range(queries)]
    memory = services.memory_service
    await memory.injection(user_id, project_id="p1", query_vector=vectors[0])  # warm
    turns = []
    for vector in vectors:
        start = time.perf_counter()
        await memory.injection(user_id, project_id="p1", query_vector=vector)
        turns.append((time.perf_counter() - start) * 1000)
    budget = Budget(services.settings.memory_baseline_max_items,
                    services.settings.memory_baseline_max_tokens)
    # The first turn after a memory change: read and order every memory once.
    cold = [timed(lambda: select_baseline(
        services.stores.memories.snapshot(user_id, "p1").memories, budget)) for _ in range(20)]
    recall = [timed(services.stores.memories.recall, user_id, v, k=20, project_id="p1")
              for v in vectors[:50]]
    return {"p50_ms": round(statistics.median(turns), 2),
            "p95_ms": round(percentile(turns, 0.95), 2), "queries": queries,
            "baseline_cold_p50_ms": round(statistics.median(cold), 2),
            "recall_p50_ms": round(statistics.median(recall), 2)}


def run(sizes: list[int], queries: int) -> list[dict]:
    rows, rng = [], random.Random(7)
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings.from_env({"CHATSVC_DATA_DIR": tmp, "CHATSVC_EMBEDDINGS": "local"})
            services = Services.open(settings, embedder=LocalEmbedder())
            try:
                user, _ = services.stores.users.add("bench")
                seed(services, user.id, size, rng)
                timing = anyio.run(measure, services, user.id, queries, rng)
                rows.append({"memories": size, **timing})
            finally:
                services.stores.db.close()
        print(rows[-1], flush=True)
    return rows


def write(rows: list[dict]) -> None:
    RESULTS.mkdir(exist_ok=True)
    note = describe()
    meta = {"python": platform.python_version(), "machine": platform.machine(), "note": note}
    (RESULTS / "memory_injection.json").write_text(
        json.dumps({"meta": meta, "results": rows}, indent=2, sort_keys=True) + "\n")
    lines = ["# Memory injection latency (baseline + semantic recall, embedding excluded)", "",
             note, "", "Turn = `memory_injection` with a cached baseline (the usual case); cold = "
             "reading and ordering the baseline after a memory change; recall = KNN + join.",
             "", "| memories | turn p50 ms | turn p95 ms | cold baseline p50 ms | "
             "recall p50 ms | queries |", "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['memories']} | {r['p50_ms']} | {r['p95_ms']} | "
              f"{r['baseline_cold_p50_ms']} | {r['recall_p50_ms']} | {r['queries']} |"
              for r in rows]
    (RESULTS / "memory_injection.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    write(run(args.sizes, args.queries))


if __name__ == "__main__":
    main()
