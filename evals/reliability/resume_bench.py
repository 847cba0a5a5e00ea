"""Resumable streams through a real `chatsvc serve`, loopback only: what recording a
turn's events costs, and how fast a client re-attaches.

* Plain and resumable rounds of N concurrent streamed turns (the load bench's client
  and scripted upstream, tokens stamped): token latency, server CPU per turn.
* Re-attach: N concurrent resumable turns, each client hanging up after
  `--leave-after` deltas and at once asking `GET /api/conversations/{id}/stream` with
  its last id: the time from that request to the first replayed event, and a check
  that the deltas before and after the hang-up are the stored answer exactly.
* From the database afterwards: events and append batches (transactions) per turn.
* In process: the cost of one append (a batch of `--batch` events) on SQLite.

    python -m evals.reliability.resume_bench [--concurrency 20] [--tokens 50]
        [--token-delay 0.02]

Writes evals/results/resume_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from chatsvc.testing import Reply, ServiceProcess
from evals._machine import describe
from evals.reliability.load_bench import (
    RESULTS,
    Target,
    dependencies,
    measured_round,
    percentile,
    serve_env,
    targets_service,
)


def resumable_targets(child: ServiceProcess, tokens: list[str], n: int) -> list[Target]:
    return [Target(t.port, t.path, {**t.body, "resumable": True}, t.headers, t.done, t.failed)
            for t in targets_service(child, tokens, n, "resumable")]


async def leave_and_reattach(http: httpx.AsyncClient, token: str, leave_after: int) -> dict:
    """One resumable turn: hang up after `leave_after` deltas, re-attach at once."""
    headers = {"Authorization": f"Bearer {token}"}
    first, last_id, conversation = [], 0, None
    async with http.stream("POST", "/api/chat", headers=headers, json={
            "message": "tell me a story", "resumable": True}) as response:
        async for event, ident, data in _events(response):
            last_id = ident
            if event == "meta":
                conversation = data["conversation_id"]
            elif event == "delta":
                first.append(data["content"])
                if len(first) == leave_after:
                    break
    asked = time.monotonic()
    rest, first_event_ms, end = [], None, None
    async with http.stream("GET", f"/api/conversations/{conversation}/stream",
                           headers={**headers, "Last-Event-ID": str(last_id)}) as response:
        async for event, ident, data in _events(response):
            first_event_ms = first_event_ms or (time.monotonic() - asked) * 1000
            assert ident == last_id + 1, (ident, last_id)
            last_id, end = ident, event
            if event == "delta":
                rest.append(data["content"])
    stored = (await http.get(f"/api/conversations/{conversation}",
                             headers=headers)).json()["messages"][-1]
    return {"first_event_ms": first_event_ms, "ended": end,
            "exact": "".join(first + rest) == stored["content"] and end == "done"}


async def _events(response: httpx.Response):
    event, ident = None, 0
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            ident = int(line[4:])
        elif line.startswith("data: "):
            yield event, ident, json.loads(line[6:])


async def reattach_round(child: ServiceProcess, tokens: list[str], n: int,
                         leave_after: int) -> dict:
    limits = httpx.Limits(max_connections=4 * n)
    async with httpx.AsyncClient(base_url=child.url, timeout=120, limits=limits) as http:
        results = await asyncio.gather(*[
            leave_and_reattach(http, tokens[i % len(tokens)], leave_after) for i in range(n)])
    firsts = [r["first_event_ms"] for r in results if r["first_event_ms"] is not None]
    return {"turns": n, "exact": sum(r["exact"] for r in results),
            "first_replayed_event_ms": {"p50": round(percentile(firsts, 0.5), 1),
                                        "p95": round(percentile(firsts, 0.95), 1),
                                        "max": round(max(firsts), 1) if firsts else None}}


def batches(database: Path) -> dict:
    """Events and append batches per turn (one batch's rows share their created_at)."""
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT count(*), count(DISTINCT created_at) FROM turn_events "
                            "GROUP BY turn_id").fetchall()
    return {"turns": len(rows),
            "events_per_turn": round(statistics.fmean(r[0] for r in rows), 1),
            "appends_per_turn": round(statistics.fmean(r[1] for r in rows), 1)}


def append_cost(batch: int, repeats: int = 300) -> dict:
    """ms per `TurnEvents.append` of `batch` events on a real SQLite file (WAL)."""
    from store import SqliteDatabase
    from store.chats import Chats
    from store.turn_events import TurnEvents
    from store.users import Users

    with tempfile.TemporaryDirectory() as tmp:
        db = SqliteDatabase(Path(tmp) / "bench.db", embed_model="none", embed_dim=4)
        user, _ = Users(db).add("bench")
        conversation, question = Chats(db).start_turn(user.id, "hello")
        events = TurnEvents(db)
        data = json.dumps({"content": " tok12"})
        started = time.perf_counter()
        for i in range(repeats):
            events.append(conversation.id, question.id,
                          [(i * batch + j + 1, "delta", data) for j in range(batch)])
        seconds = time.perf_counter() - started
        db.close()
    return {"batch_events": batch, "ms_per_append": round(seconds * 1000 / repeats, 3)}


def measure(args) -> dict:
    chunks = [f" tok{i}" for i in range(args.tokens)]
    reply = Reply(chunks=chunks, chunk_delay=args.token_delay, stamp=True)
    start = describe()
    with tempfile.TemporaryDirectory() as tmp, dependencies(reply, "ollama-wire") as deps:
        child = ServiceProcess(Path(tmp) / "data", serve_env(args, deps))
        tokens = [child.add_user(f"user{i}") for i in range(args.concurrency)]
        with child:
            measured_round(child, deps, targets_service(child, tokens, args.concurrency,
                                                        "warm"), args.round_timeout)
            plain = measured_round(child, deps, targets_service(
                child, tokens, args.concurrency, "plain"), args.round_timeout)
            resumable = measured_round(child, deps, resumable_targets(
                child, tokens, args.concurrency), args.round_timeout)
            recorded = batches(child.settings.database_path)
            reattach = asyncio.run(reattach_round(child, tokens, args.concurrency,
                                                  args.leave_after))
            crashes = child.crashes()
    return {"config": vars(args), "plain": plain, "resumable": resumable,
            "recorded": recorded, "reattach": reattach,
            "append": append_cost(args.batch), "server_log_crash_lines": len(crashes),
            "machine": f"{start}; {os.getloadavg()[0]:.1f} at the end"}


def markdown(result: dict) -> str:
    def row(name: str, r: dict) -> str:
        return (f"| {name} | {r['streams']} | {r['errors']} | {r['token_latency_ms']['p50']} "
                f"| {r['token_latency_ms']['p95']} | {r['first_token_ms']['p50']} "
                f"| {r['server_cpu_ms_per_turn']} |")

    recorded, reattach, append = result["recorded"], result["reattach"], result["append"]
    return "\n".join([
        "# Resumable streams: recording cost and re-attach latency (loopback)", "",
        f"Config: {json.dumps(result['config'])}", f"Machine: {result['machine']}", "",
        "| round | streams | errors | token latency p50 ms | p95 ms | first token p50 ms "
        "| server CPU ms per turn |", "|---|---|---|---|---|---|---|",
        row("plain (recorded, cancelled on disconnect)", result["plain"]),
        row("resumable", result["resumable"]), "",
        f"Recorded per turn: {recorded['events_per_turn']} events in "
        f"{recorded['appends_per_turn']} appends (transactions) over {recorded['turns']} "
        f"turns; one append of {append['batch_events']} events costs "
        f"{append['ms_per_append']} ms on SQLite (in process, no contention).", "",
        f"Re-attach ({reattach['turns']} concurrent turns, each client hanging up mid-answer "
        f"and asking at once): first replayed event p50 "
        f"{reattach['first_replayed_event_ms']['p50']} ms, p95 "
        f"{reattach['first_replayed_event_ms']['p95']} ms, max "
        f"{reattach['first_replayed_event_ms']['max']} ms; replay exact (first part + "
        f"replay == stored answer, ids consecutive) for {reattach['exact']} of "
        f"{reattach['turns']}.", "",
        f"Crash lines in the server log: {result['server_log_crash_lines']}", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--token-delay", type=float, default=0.02)
    parser.add_argument("--leave-after", type=int, default=10)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--round-timeout", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    result = measure(args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "resume_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "resume_bench.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
