"""Fact sheet generation and extraction request building: time per call.

* sheet  - `chatsvc.fact_sheet.generate` for one user with N live facts and the
           1200 most recent extraction records (of 3 x 1200 written), i.e. the read,
           scoring, assembly, canonical JSON and the insert + retention.
* request - `build_request` for a 12k-token cap: 100 known facts and 400 pending
           messages (the tokenizer dominates).

    python -m evals.bench_fact_sheet [--sizes 1000,10000] [--repeat 10]

Writes evals/results/fact_sheet_generation.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from chatsvc.extraction import KnownFact, build_request
from chatsvc.fact_sheet import generate
from context.tokens import DEFAULT_TOKENIZER
from evals._machine import describe
from store import Database, SqliteDatabase, Users
from store.clock import iso
from store.extraction import PendingMessage
from store.fact_sheets import FactSheets
from store.facts import CATEGORIES

RESULTS = Path(__file__).parent / "results"
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def populate(db: Database, size: int) -> str:
    user_id = Users(db).add(f"bench-{size}")[0].id
    with db.transaction() as conn:
        for i in range(size):
            conn.execute(
                "INSERT INTO facts(id, user_id, category, fact, content_hash, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (f"f{i:06d}", user_id, CATEGORIES[i % 4], f"fact number {i}", str(i),
                 iso(NOW), iso(NOW)),
            )
        for j in range(3600):
            conn.execute(
                "INSERT INTO fact_extractions(fact_id, user_id, extracted_at) VALUES (?, ?, ?)",
                (f"f{(j * 7919) % size:06d}", user_id, iso(NOW - timedelta(minutes=17 * j))),
            )
    return user_id


def timed(fn, repeat: int) -> dict:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 2),
            "max_ms": round(samples[-1], 2)}


def bench_request(repeat: int) -> dict:
    known = [KnownFact(f"f{i}", f"id{i}", CATEGORIES[i % 4], f"The user fact number {i}")
             for i in range(1, 101)]
    pending = [PendingMessage(f"m{i}", "c", "user", f"message {i} " + "word " * 40, iso(NOW))
               for i in range(400)]
    request = build_request(known, pending, budget=10_000, tokenizer=DEFAULT_TOKENIZER)
    stats = timed(lambda: build_request(known, pending, budget=10_000,
                                        tokenizer=DEFAULT_TOKENIZER), repeat)
    return {**stats, "messages_in_request": len(request.messages), "tokens": request.tokens}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in args.sizes.split(",")]:
            db = SqliteDatabase(Path(tmp) / f"s{size}.sqlite3", embed_model="bench", embed_dim=4)
            user_id = populate(db, size)
            sheets = FactSheets(db)
            rows.append({"facts": size, **timed(lambda s=sheets, u=user_id: generate(
                s, u, now=NOW), args.repeat)})
            db.close()
    result = {
        "measured_at": iso(datetime.now(UTC)), "machine": platform.machine(),
        "note": describe(),
        "load_average_before": round(load_before, 1),
        "load_average_after": round(os.getloadavg()[0], 1),
        "sheet": rows, "request": bench_request(args.repeat),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fact_sheet_generation.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Fact sheet generation and extraction request building",
        "",
        f"Measured {result['measured_at']} on {result['note']}; load average "
        f"{result['load_average_before']} before, {result['load_average_after']} after.",
        "",
        "| live facts | extraction records read | generate p50 | generate max |",
        "|---:|---:|---:|---:|",
        *[f"| {r['facts']:,} | 1,200 | {r['p50_ms']} ms | {r['max_ms']} ms |" for r in rows],
        "",
        f"`build_request` (100 known facts, 400 pending messages, 10k-token budget): "
        f"p50 {result['request']['p50_ms']} ms, max {result['request']['max_ms']} ms; "
        f"{result['request']['messages_in_request']} messages fit, "
        f"{result['request']['tokens']} tokens.",
        "",
    ]
    (RESULTS / "fact_sheet_generation.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
