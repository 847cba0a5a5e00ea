"""python -m evals.refresh_bench [--chunks 100000] [--facts 100000] [--out PATH]

What a search costs after the in-memory vector index changed under it (SQLite), for
knowledge chunks (768-d, the shared index) and one user's facts (768-d, a per-user
index), on the clustered synthetic vectors of `evals.knowledge_bench`:

* cold      the first search of a process that has loaded nothing (reads the tables)
* warm      search p50 (and, for facts, recall@10 against exact float32 search)
* other     the next search after ANOTHER process (a second Database on the file) adds
            1 document (10 chunks) or 10 facts
* own       the next search after this process adds the same (the write itself apart)
* restart   the first search of a new process on the file (after the writes above)

Each of other/own is measured `--repeat` times (median). Only public store calls are
used, so the same file measures an older checkout: run it with PYTHONPATH pointing at
that checkout (`--out` keeps the figures out of it). Wall and process CPU times are
both given: on a loaded machine CPU is the better estimate of an idle one.
Results: evals/results/refresh_bench.{json,md} unless `--out` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from evals._machine import describe
from evals.knowledge_bench import CHUNKS_PER_ENTRY, DIM, populate, recall, synthetic, texts
from store import ChunkIn, Facts, Knowledge, SqliteDatabase, Users
from store.contract import EmbedJob
from store.facts import content_hash

RESULTS = Path(__file__).resolve().parent / "results"


def _open(path: Path) -> SqliteDatabase:
    return SqliteDatabase(path, embed_model="bench", embed_dim=DIM)


def _clock(fn) -> tuple[float, float, object]:
    """(wall ms, CPU ms, result) of one call."""
    started, started_cpu = time.perf_counter(), time.process_time()
    out = fn()
    return ((time.perf_counter() - started) * 1000, (time.process_time() - started_cpu) * 1000,
            out)


def _median(samples: list[tuple]) -> dict:
    return {"wall_ms": round(statistics.median(s[0] for s in samples), 1),
            "cpu_ms": round(statistics.median(s[1] for s in samples), 1)}


class _Knowledge:
    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.vectors, self.words = synthetic(n, rng), texts(n, rng)
        self.queries = self.vectors[rng.integers(0, n, 20)]
        self.spare = synthetic(1000, rng)

    def fill(self, db) -> None:
        populate(db, self.vectors, self.words)

    def search(self, db_store, i: int = 0):
        return db_store.semantic(self.queries[i % len(self.queries)], viewer_id="b", limit=10)

    def store(self, db):
        return Knowledge(db)

    def write(self, store, i: int) -> None:
        chunks = [ChunkIn(f"added {i} {j}", "en") for j in range(CHUNKS_PER_ENTRY)]
        saved = store.save(owner_id=None, title=f"added {i}", content=f"added {i}",
                           source_type="document", chunks=chunks)
        spare = self.spare[i * CHUNKS_PER_ENTRY:(i + 1) * CHUNKS_PER_ENTRY]
        store.save_embeddings(list(zip(saved.jobs, spare, strict=True)))

    def recall(self, store) -> float | None:
        return None  # knowledge_bench measures it (same index, more queries)


class _Facts:
    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.vectors = synthetic(n, rng)
        picks = rng.integers(0, n, 40)
        self.queries = self.vectors[picks] + 0.05 * rng.standard_normal((40, DIM)).astype(
            np.float32)
        self.spare = synthetic(1000, rng)
        self.user = ""

    def fill(self, db) -> None:
        facts = Facts(db)
        self.user = Users(db).add("bench")[0].id
        for start in range(0, len(self.vectors), 1000):
            batch = []
            for i in range(start, min(start + 1000, len(self.vectors))):
                text = f"fact {i}"
                fact = facts.create(self.user, category="core", fact=text)
                batch.append((EmbedJob(fact.id, text, content_hash(text)), self.vectors[i]))
            facts.save_embeddings(batch)

    def store(self, db):
        return Facts(db)

    def search(self, store, i: int = 0):
        return store.search_by_vector(self.user, self.queries[i % len(self.queries)].tolist(),
                                      limit=10, max_distance=2.0)

    def write(self, store, i: int) -> None:
        for j in range(10):
            store.create(self.user, category="core", fact=f"added {i} {j}",
                         embedding=self.spare[i * 10 + j].tolist())

    def recall(self, store) -> float:
        exact = [list(np.argsort(-(self.vectors @ q))[:10]) for q in self.queries]
        found = [[int(h.fact.fact.split()[1]) for h in self.search(store, i)
                  if h.fact.fact.startswith("fact ")] for i in range(len(self.queries))]
        return recall(found, exact)


def measure(domain, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite3"
        db = _open(path)
        started = time.perf_counter()
        domain.fill(db)
        result = {"setup_s": round(time.perf_counter() - started, 1)}
        db.close()
        here, there = _open(path), _open(path)
        mine, theirs = domain.store(here), domain.store(there)
        result["cold"] = _median([_clock(lambda: domain.search(mine))])
        warm = [_clock(lambda i=i: domain.search(mine, i)) for i in range(1, 41)]
        result["warm_p50"] = _median(warm)
        result["recall@10"] = domain.recall(mine)
        domain.search(theirs)  # the other process has its index loaded too
        other, own, writes = [], [], []
        for i in range(repeat):
            domain.write(theirs, 2 * i)
            other.append(_clock(lambda i=i: domain.search(mine, i)))
            writes.append(_clock(lambda i=i: domain.write(mine, 2 * i + 1)))
            own.append(_clock(lambda i=i: domain.search(mine, i)))
        result.update(other=_median(other), own=_median(own), own_write=_median(writes))
        there.close()
        here.close()
        opened = _clock(lambda: _open(path))
        result["restart"] = _median([_clock(lambda: domain.search(domain.store(opened[2])))])
        result["restart_open"] = _median([opened])
        opened[2].close()
    return result


def markdown(result: dict) -> str:
    lines = ["# Search after the vector index changed (SQLite)", "", result["note"], "",
             "| index | rows | cold first search | warm p50 | recall@10 | after another "
             "process's write | after own write | own write itself | first search after "
             "restart |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, figures in result["indexes"].items():
        cells = [f"{figures[k]['wall_ms']} ms (CPU {figures[k]['cpu_ms']})"
                 for k in ("cold", "warm_p50", "other", "own", "own_write", "restart")]
        cells.insert(2, str(figures["recall@10"] or "-"))
        lines.append(f"| {name} | {figures['rows']:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _load() -> str:
    """The 1/5/15-minute load averages now."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=RESULTS / "refresh_bench")
    args = parser.parse_args()
    load_start = _load()
    rng = np.random.default_rng(23)
    indexes = {}
    if args.chunks:
        indexes["knowledge chunks"] = {"rows": args.chunks,
                                       **measure(_Knowledge(args.chunks, rng), args.repeat)}
    if args.facts:
        indexes["facts (one user)"] = {"rows": args.facts,
                                       **measure(_Facts(args.facts, rng), args.repeat)}
    load_end = _load()
    result = {"note": (f"{args.label} {DIM}-d clustered synthetic vectors; {describe()}; "
                       f"load average {load_start} at the start, {load_end} at the end.").strip(),
              "indexes": indexes}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
