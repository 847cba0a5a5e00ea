"""Concurrent streaming chats through a real `chatsvc serve`, loopback only.

N concurrent POST /api/chat streams (default 200) against the scripted upstream
(its own process) sending a token every ~20 ms, each token stamped with the
moment it was written (`Reply(stamp=True)`, CLOCK_MONOTONIC is machine-wide).
A token's latency is its arrival at this client minus that stamp. The same
client first streams the same replies from the upstream directly: latency
through chatsvc minus latency from the upstream alone is what chatsvc adds per
token. Also: time to first token, throughput, error rate, the server's memory.

Embeddings come from a loopback server speaking Ollama's wire format (the
embedding model's cost is not what this measures); `--embeddings local` uses
the in-process model instead. Bounded: `--rounds` rounds of N chats, each round
under `--round-timeout` seconds. `--soak SECONDS` repeats rounds for that long
and samples memory after each (documented; not run in CI).

    python -m evals.reliability.load_bench [--concurrency 200] [--tokens 50]
        [--token-delay 0.02] [--rounds 2] [--soak 600]

Writes evals/results/reliability_load.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from chatsvc.testing import Reply, ScriptedUpstream, ServiceProcess, cpu_seconds
from evals._machine import describe
from evals._spawned import spawned

RESULTS = Path(__file__).resolve().parents[1] / "results"
USERS = 20


STAMP = re.compile(rb"@(\d+\.\d+);")
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3})")


@dataclass
class Stream:
    started: float
    arrivals: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)  # arrival - upstream write
    ok: bool = False
    error: str | None = None

    def tokens(self, now: float, stamps: list[bytes]) -> None:
        self.arrivals += [now] * len(stamps)
        self.latencies_ms += [(now - float(sent)) * 1000 for sent in stamps]

    @property
    def first_token_ms(self) -> float | None:
        return (self.arrivals[0] - self.started) * 1000 if self.arrivals else None


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


@dataclass(frozen=True)
class Target:
    """One streaming POST and the bytes that end its stream well or badly."""
    port: int
    path: str
    body: dict
    headers: dict
    done: bytes  # b"event: done" (chatsvc) or b"data: [DONE]" (the upstream)
    failed: bytes | None = None

    def request(self) -> bytes:
        body = json.dumps(self.body).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in {
            "Host": f"127.0.0.1:{self.port}", "Content-Type": "application/json",
            "Content-Length": len(body), "Connection": "close", **self.headers}.items())
        return f"POST {self.path} HTTP/1.1\r\n{head}\r\n".encode() + body


class StreamReader(asyncio.Protocol):
    """One streamed response as raw bytes: only the stamps, the status and the end
    markers are looked for. An httpx client parsing every line saturated one core
    at about 6,000 events/s, which hid what the service adds at 200 streams."""

    def __init__(self, target: Target, stream: Stream, ended: asyncio.Future) -> None:
        self.target, self.stream, self.ended = target, stream, ended
        self.tail = b""  # bytes after the last newline: a stamp may be cut in two
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(self.target.request())

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        buffer = self.tail + data
        cut = buffer.rfind(b"\n") + 1
        lines, self.tail = buffer[:cut], buffer[cut:]
        if not self.stream.arrivals and (status := STATUS.match(lines)) \
                and status.group(1) != b"200":
            self.stream.error = f"HTTP {status.group(1).decode()}"
        if stamps := STAMP.findall(lines):
            self.stream.tokens(now, stamps)
        if self.target.done in lines:
            self.stream.ok = self.stream.error is None
        elif self.target.failed and self.target.failed in lines:
            self.stream.error = lines[lines.index(self.target.failed):][:300].decode(
                errors="replace")

    def connection_lost(self, exc) -> None:
        if exc is not None and self.stream.error is None:
            self.stream.error = f"{type(exc).__name__}: {exc}"
        if not self.ended.done():
            self.ended.set_result(None)


async def one_stream(target: Target, timeout: float) -> Stream:
    loop = asyncio.get_running_loop()
    stream, ended = Stream(time.monotonic()), loop.create_future()
    reader = StreamReader(target, stream, ended)
    try:
        await asyncio.wait_for(
            loop.create_connection(lambda: reader, "127.0.0.1", target.port), timeout)
        await asyncio.wait_for(ended, timeout - (time.monotonic() - stream.started))
    except (OSError, TimeoutError) as exc:
        stream.error = stream.error or f"{type(exc).__name__}: {exc}"
    finally:
        if reader.transport is not None:
            reader.transport.close()
    return stream


async def _round(targets: list[Target], timeout: float) -> tuple[list[Stream], float]:
    started = time.monotonic()
    streams = await asyncio.gather(*[one_stream(target, timeout) for target in targets])
    return streams, time.monotonic() - started


def run_round(targets: list[Target], timeout: float) -> tuple[list[Stream], float]:
    """Every stream at once; each ends by itself within `timeout` seconds."""
    return asyncio.run(_round(targets, timeout))


def summarize(streams: list[Stream], seconds: float) -> dict:
    latencies = [x for s in streams for x in s.latencies_ms]
    firsts = [s.first_token_ms for s in streams if s.first_token_ms is not None]
    tokens = sum(len(s.arrivals) for s in streams)
    errors = [s.error or "ended without done" for s in streams if not s.ok]
    return {
        "streams": len(streams), "errors": len(errors), "error_rate": len(errors) / len(streams),
        "error_samples": sorted(set(errors))[:5], "tokens": tokens,
        "seconds": round(seconds, 3), "tokens_per_second": round(tokens / seconds, 1),
        "token_latency_ms": {"p50": round(percentile(latencies, 0.5), 2),
                             "p95": round(percentile(latencies, 0.95), 2),
                             "mean": round(statistics.fmean(latencies), 2) if latencies else 0.0},
        "first_token_ms": {"p50": round(percentile(firsts, 0.5), 1),
                           "p95": round(percentile(firsts, 0.95), 1)},
    }


def targets_direct(base_url: str, n: int) -> list[Target]:
    body = {"model": "scripted-model", "stream": True,
            "messages": [{"role": "user", "content": "hello"}]}
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    return [Target(port, "/v1/chat/completions", body, {}, b"data: [DONE]")] * n


def targets_service(child: ServiceProcess, tokens: list[str], n: int, tag: str) -> list[Target]:
    return [Target(child.port, "/api/chat", {"message": f"{tag} question {i}: tell me a story"},
                   {"Authorization": f"Bearer {tokens[i % len(tokens)]}"},
                   b"event: done", b"event: error")
            for i in range(n)]


def _dependencies(reply: Reply, embeddings: str, urls, stop) -> None:
    from tests.reliability.ollama_server import OllamaServer

    with ScriptedUpstream(default=reply) as upstream:
        ollama = OllamaServer().start() if embeddings == "ollama-wire" else None
        urls.put((upstream.base_url, ollama and ollama.url))
        stop.wait()
        if ollama:
            ollama.stop()


@dataclass(frozen=True)
class Dependencies:
    upstream_url: str
    ollama_url: str | None
    pid: int


@contextmanager
def dependencies(reply: Reply, embeddings: str):
    """The scripted upstream and the Ollama-wire server in a process of their own:
    their threads must not share an interpreter lock with the client."""
    with spawned(_dependencies, reply, embeddings) as (urls, pid):
        yield Dependencies(*urls, pid=pid)


def serve_env(args, deps: Dependencies) -> dict[str, str]:
    env = {"LLM_BASE_URL": deps.upstream_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
           "CHATSVC_LOG_LEVEL": "WARNING", "LLM_TIMEOUT": str(args.round_timeout),
           "CHATSVC_WORKERS": str(args.workers),
           # Each of the USERS runs concurrency / USERS streams at once: lift the per-user cap.
           "CHATSVC_MAX_STREAMS_PER_USER": str(args.concurrency)}
    if deps.ollama_url:
        env.update(CHATSVC_EMBEDDINGS="ollama", OLLAMA_URL=deps.ollama_url)
    else:
        env.update(CHATSVC_EMBEDDINGS="local")
    return env


def measured_round(child: ServiceProcess, deps: Dependencies, targets: list[Target],
                   timeout: float) -> dict:
    """One round's figures, with the CPU seconds each process spent on it."""
    before = (child.cpu_seconds(), cpu_seconds(deps.pid), time.process_time())
    streams, seconds = run_round(targets, timeout)
    server, upstream, client = (after - start for after, start in zip(
        (child.cpu_seconds(), cpu_seconds(deps.pid), time.process_time()), before,
        strict=True))
    return {**summarize(streams, seconds), "server_cpu_s": round(server, 2),
            "server_cpu_ms_per_turn": round(server * 1000 / len(streams), 1),
            "upstream_and_embeddings_cpu_s": round(upstream, 2),
            "client_cpu_s": round(client, 2)}


def measure(args) -> dict:
    chunks = [f" tok{i}" for i in range(args.tokens)]
    reply = Reply(chunks=chunks, chunk_delay=args.token_delay, stamp=True)
    machine = describe()  # the load average before anything starts
    with tempfile.TemporaryDirectory() as tmp, dependencies(reply, args.embeddings) as deps:
        child = ServiceProcess(Path(tmp) / "data", serve_env(args, deps))
        tokens = [child.add_user(f"user{i}") for i in range(USERS)]
        with child:
            warm, _ = run_round(targets_service(child, tokens, 20, "warm"), args.round_timeout)
            direct, direct_s = run_round(targets_direct(deps.upstream_url, args.concurrency),
                                         args.round_timeout)
            rss = {"after_warmup_kib": child.memory_kib()}
            rounds = []
            deadline = time.monotonic() + args.soak
            while len(rounds) < args.rounds or time.monotonic() < deadline:
                rounds.append(measured_round(child, deps, targets_service(
                    child, tokens, args.concurrency, f"r{len(rounds)}"), args.round_timeout))
                rss[f"after_round_{len(rounds)}_kib"] = child.memory_kib()
            crashes = child.crashes()
    baseline = summarize(direct, direct_s)
    return {"config": vars(args), "warmup_errors": sum(not s.ok for s in warm),
            "upstream_alone": baseline, "through_chatsvc": rounds,
            "added_per_token_ms": [
                {q: round(r["token_latency_ms"][q] - baseline["token_latency_ms"][q], 2)
                 for q in ("p50", "p95")}
                for r in rounds],
            "rss": rss, "server_log_crash_lines": len(crashes),
            "machine": f"{machine}; {os.getloadavg()[0]:.1f} after"}


def markdown(result: dict) -> str:
    base = result["upstream_alone"]
    lines = [
        "# Load: concurrent streaming chats (loopback)", "",
        f"Config: {json.dumps(result['config'])}", f"Machine: {result['machine']}", "",
        "| run | streams | errors | tokens/s | token latency p50 ms | p95 ms | added p50 ms "
        "| added p95 ms | first token p50 ms | first token p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| upstream alone | {base['streams']} | {base['errors']} | {base['tokens_per_second']} "
        f"| {base['token_latency_ms']['p50']} | {base['token_latency_ms']['p95']} | - | - "
        f"| {base['first_token_ms']['p50']} | {base['first_token_ms']['p95']} |",
    ]
    for i, (r, added) in enumerate(zip(result["through_chatsvc"], result["added_per_token_ms"],
                                       strict=True)):
        lines.append(
            f"| chatsvc round {i + 1} | {r['streams']} | {r['errors']} | {r['tokens_per_second']} "
            f"| {r['token_latency_ms']['p50']} | {r['token_latency_ms']['p95']} "
            f"| {added['p50']} | {added['p95']} "
            f"| {r['first_token_ms']['p50']} | {r['first_token_ms']['p95']} |")
    lines += ["", "Server CPU per round (s): " + ", ".join(
        f"{r['server_cpu_s']} ({r['server_cpu_ms_per_turn']} ms per turn)"
        for r in result["through_chatsvc"]),
        "", "Upstream + embeddings process / client process CPU per round (s): " + ", ".join(
            f"{r['upstream_and_embeddings_cpu_s']} / {r['client_cpu_s']}"
            for r in result["through_chatsvc"])]
    lines += ["", "Server resident memory (KiB, total / anonymous / file-backed): " + ", ".join(
        f"{k} {v['rss']} / {v['anon']} / {v['file']}" for k, v in result["rss"].items()),
        f"Crash lines in the server log: {result['server_log_crash_lines']}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--token-delay", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--round-timeout", type=float, default=120.0)
    parser.add_argument("--soak", type=float, default=0.0, help="seconds of repeated rounds")
    parser.add_argument("--embeddings", choices=("ollama-wire", "local"), default="ollama-wire")
    parser.add_argument("--workers", type=int, default=1, help="chatsvc serve processes")
    parser.add_argument("--out", default="reliability_load")
    args = parser.parse_args()
    result = measure(args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
