"""python -m evals.chat_bench [--facts 10000] [--chunks 100000] [--messages 10000] [--turns 40]
                             [--relay-chunks 2000] [--service-ms 20]

Chat turn overhead of the real app over a real socket (uvicorn in a thread, the
scripted upstream on loopback, the real local embedder for the query):

* overhead: request sent by the client -> chat request received by the upstream,
  minus the query embedding time the server reports in its Server-Timing header,
  for a user with `--facts` facts (10k), `--messages` earlier messages (10k, for
  conversational recall) and a knowledge base of `--chunks` chunks (100k); broken down
  into stable layers, facts KNN, memory, knowledge search, recall, assembly. Each
  turn's own messages are indexed in the background, as in production. Fact, memory,
  chunk and message vectors are synthetic (random unit vectors; the latency of KNN
  does not depend on what the vectors mean), texts synthetic.
* relay: extra time per streamed chunk through /api/chat (SSE) compared with
  reading the same scripted stream directly with the openai client.
* embedding service: the same turns (each after indexing caught up) with the query
  embedded by a service on other hardware, as with Ollama on a GPU: an Ollama stand-in
  on loopback (tests/reliability/ollama_server.py) that answers `--service-ms` after
  each request, with the production client. With the head start (the embedding runs
  beside storing the question) and without it (the code before it: after the store's
  work), alternating in blocks of 10 turns; after each block, 10 stateless turns of an
  OpenAI client (`/v1/chat/completions`: request sent -> upstream received) and 10
  hybrid conversation and knowledge searches (their keyword halves ranked in the wait).
* ollama down: the same turns with the embedder pointed at a closed port
  (Ollama client with its circuit breaker): time to notice, and the whole
  overhead of a fallback turn.

Results: evals/results/chat_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import httpx
import numpy as np
import uvicorn

from chatsvc import Services, Settings, create_app
from chatsvc.embeddings import LocalEmbedder, build_embedder
from chatsvc.fact_sheet import generate
from chatsvc.local_models import free_port
from chatsvc.testing import ScriptedUpstream
from evals._machine import describe
from evals._spawned import spawned
from evals.chat_clients import MATCHED, openai_turns, searches, turns
from evals.chat_relay import relay, relay_in_process
from evals.conversation_search_bench import populate as populate_messages
from evals.conversation_search_bench import texts
from store import ChunkIn

RESULTS = Path(__file__).resolve().parent / "results"
CATEGORIES = ("core", "technical", "project", "transient")


def unit_vectors(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def populate(services: Services, user_id: str, n_facts: int, n_chunks: int, n_messages: int
             ) -> dict:
    rng = np.random.default_rng(7)
    dim = services.stores.db.embed_dim
    timings = {}
    started = time.perf_counter()
    for i in range(n_facts):
        services.stores.facts.create(user_id, category=CATEGORIES[i % 4],
                              fact=f"Synthetic fact {i} about topic {i % 97} and item {i % 13}")
    jobs = services.stores.facts.unembedded(limit=n_facts)
    services.stores.facts.save_embeddings(list(zip(jobs, unit_vectors(len(jobs), dim, rng).tolist(),
                                            strict=True)))
    timings["facts_s"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    knowledge = services.knowledge.knowledge
    vocabulary = [f"w{i}" for i in range(20_000)]
    jobs = []
    for start in range(0, n_chunks, 10):
        ranks = np.minimum(rng.zipf(1.3, (10, 40)), 20_000) - 1
        chunks = [ChunkIn(" ".join(vocabulary[r] for r in row), "en") for row in ranks]
        jobs += knowledge.save(owner_id=None, title=f"Entry {start}", content=f"entry {start}",
                               source_type="document", chunks=chunks).jobs
    for start in range(0, len(jobs), 5000):
        batch = jobs[start:start + 5000]
        knowledge.save_embeddings(list(zip(batch, unit_vectors(len(batch), dim, rng),
                                           strict=True)))
    timings["chunks_s"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    populate_messages(services.stores.db, user_id, texts(n_messages, rng),
                      unit_vectors(n_messages, dim, rng))
    timings["messages_s"] = round(time.perf_counter() - started, 1)

    for i in range(20):
        services.stores.memories.create(user_id, type="preference", scope="global",
                                 project_id=None, content=f"Preference number {i}",
                                 origin="manual", embedding=unit_vectors(1, dim, rng)[0].tolist())
    generate(services.stores.fact_sheets, user_id, now=datetime.now(UTC))
    for i in range(4):
        services.stores.posts.create(author_id=None, title=f"Post {i}", content=f"Body {i}",
                              excerpt=f"Excerpt {i}", published=True)
    return timings


@contextmanager
def serve(services: Services):
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(services=services), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def pct(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
            "n": len(ordered)}


async def notice_down(settings: Settings) -> dict:
    """How long embed_query takes to fail with Ollama on a closed port (first, then breaker)."""
    embedder = build_embedder(settings.with_overrides(
        embeddings="ollama", ollama_url="http://127.0.0.1:9"))
    times = []
    for _ in range(20):
        started = time.perf_counter()
        with suppress(Exception):
            await embedder.embed_query("is anyone there?")
        times.append((time.perf_counter() - started) * 1000)
    await embedder.aclose()
    return {"first_ms": round(times[0], 2), "breaker_open": pct(times[1:])}


SERVICE_RUNS = tuple(f"{start}{kind}" for kind in ("", ", /v1", ", searches")
                     for start in ("head start", "no head start"))


def _embedding_service(dim: int, seconds: float, urls, stop) -> None:
    """The Ollama stand-in, in a process of its own as a real service is."""
    from tests.reliability.ollama_server import OllamaServer

    ollama = OllamaServer(dim=dim, slow_seconds=seconds).start()
    ollama.mode = "slow"
    urls.put(ollama.url)
    stop.wait()
    ollama.stop()


def _takes_cores(takes: bool, query: str) -> bool:
    return takes


def service_turns(http: httpx.Client, upstream: ScriptedUpstream, services: Services,
                  settings: Settings, n: int, service_ms: float) -> dict[str, list[dict]]:
    """Paused turns with an embedding service, with and without the head start, as many
    stateless turns of an OpenAI client (`, /v1`) and searches (`, searches`)."""
    rows: dict[str, list[dict]] = {label: [] for label in SERVICE_RUNS}
    with spawned(_embedding_service, services.stores.db.embed_dim,
                 service_ms / 1000) as (url, _):
        embedder = build_embedder(settings.with_overrides(embeddings="ollama", ollama_url=url))
        services.sources.embedder = services.recall.embedder = embedder
        services.knowledge.embedder = embedder
        for block in range(2 * max(1, n // 10)):
            label = "no head start" if block % 2 else "head start"
            # as if the model took every core: no head start
            embedder.shares_cores = partial(_takes_cores, label == "no head start")
            rows[label] += turns(http, upstream, 10, paused=True)
            rows[f"{label}, /v1"] += openai_turns(http, upstream, settings.llm_model, 10)
            rows[f"{label}, searches"] += searches(http, 10)
    return rows


def run(args) -> dict:
    with tempfile.TemporaryDirectory() as tmp, ScriptedUpstream() as upstream:
        settings = Settings.from_env({
            "CHATSVC_DATA_DIR": tmp, "CHATSVC_EMBEDDINGS": "local", "CHATSVC_LOCAL_MODELS": "off",
            "LLM_BASE_URL": upstream.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
            "CHATSVC_LOG_LEVEL": "WARNING",
        })
        services = Services.open(settings, embedder=LocalEmbedder())
        user, token = services.stores.users.add("bench")
        headers = {"Authorization": f"Bearer {token}"}
        result = {"facts": args.facts, "chunks": args.chunks, "messages": args.messages,
                  "populate": populate(services, user.id, args.facts, args.chunks,
                                       args.messages)}
        with serve(services) as base, httpx.Client(base_url=base, headers=headers,
                                                   timeout=120) as http:
            turns(http, upstream, 3)  # warm-up: embedder, knowledge snapshot, tokenizer
            rag = turns(http, upstream, args.turns)
            result["rag"] = {key: pct([r[key] for r in rag]) for key in rag[0]
                             if key not in ("mode",)}
            result["rag"]["modes"] = sorted({r["mode"] for r in rag})
            paused = turns(http, upstream, args.turns, paused=True)
            result["rag_paused"] = {key: pct([r[key] for r in paused]) for key in paused[0]
                                    if key not in ("mode",)}
            matched = turns(http, upstream, args.turns, paused=True, questions=MATCHED)
            result["rag_matched"] = {key: pct([r[key] for r in matched]) for key in matched[0]
                                     if key not in ("mode",)}
            result["relay"] = relay(base, headers, upstream, args.relay_chunks)
            result["service_ms"] = args.service_ms
            for label, rows in service_turns(http, upstream, services, settings, args.turns,
                                             args.service_ms).items():
                # `keywords` only where the embedding was still running (its `n` says how often)
                keys = {key for row in rows for key in row} - {"mode"}
                result[f"service, {label}"] = {key: pct([r[key] for r in rows if key in r])
                                               for key in sorted(keys)}
            # Production client and breaker settings, Ollama on a closed port.
            services.sources.embedder = build_embedder(settings.with_overrides(
                embeddings="ollama", ollama_url="http://127.0.0.1:9"))
            down = turns(http, upstream, args.turns)
            result["ollama_down"] = {key: pct([r[key] for r in down]) for key in down[0]
                                     if key not in ("mode",)}
            result["ollama_down"]["modes"] = sorted({r["mode"] for r in down})
        result["notice_down"] = asyncio.run(notice_down(settings))
        result["relay_in_process"] = asyncio.run(
            relay_in_process(upstream, settings, args.relay_chunks))
        services.stores.db.close()
    return result


def markdown(result: dict) -> str:
    rag, down = result["rag"], result["ollama_down"]
    notice = down["embed"]
    lines = [
        "# Chat turn benchmark", "", result["note"], "",
        f"User with {result['facts']} facts and {result.get('messages', 0)} earlier messages, "
        f"knowledge base of {result['chunks']} chunks "
        f"(populated in {result['populate']}).", "",
        "## Backend overhead per turn, ms", "",
        "overhead = handler took the request -> upstream call started, minus the query "
        "embedding (`to_upstream` - `embed`, from the Server-Timing header). "
        "`save_question` = storing the question and reading the history (one worker-thread "
        "hop; `history` is the read alone). `search` = facts KNN, memory recall, knowledge "
        "hybrid search and conversation recall (hybrid search over the user's messages) run "
        "one after another in one worker thread (each also shown). "
        "`loopback_ms` = client sent -> scripted upstream recorded the request "
        "(includes HTTP on both sides, auth, the embedding and the upstream's own parsing; "
        "client, app and upstream share one Python process). `rag` turns go back to back: "
        "each turn's messages are embedded in the background (in-process) while the next "
        "turn runs; `rag, indexing caught up` turns wait for that first, as a user's pause "
        "between messages would.", "",
        "| | p50 | p95 |", "|---|---|---|",
    ]
    for key in ("overhead_ms", "save_question", "history", "stable", "search", "facts",
                "memory", "knowledge", "recall", "assemble", "embed", "to_upstream",
                "loopback_ms"):
        if key in rag:
            lines.append(f"| rag: {key} | {rag[key]['p50']} | {rag[key]['p95']} |")
    for name, label in (("rag_paused", "indexing caught up between turns"),
                        ("rag_matched", "indexing caught up, questions the texts match")):
        for key in ("overhead_ms", "search", "knowledge", "recall", "embed"):
            if key in result.get(name, {}):
                row = result[name][key]
                lines.append(f"| rag, {label}: {key} | {row['p50']} | {row['p95']} |")
    for label in SERVICE_RUNS:
        service = result.get(f"service, {label}", {})
        for key in ("overhead_ms", "embed", "save_question", "keywords", "search",
                    "to_upstream", "loopback_ms", "conversation_search_ms",
                    "knowledge_search_ms"):
            if key in service:
                lines.append(f"| embedding service ({result['service_ms']:g} ms), {label}: "
                             f"{key} (n {service[key]['n']}) | {service[key]['p50']} | "
                             f"{service[key]['p95']} |")
    for key in ("overhead_ms", "embed", "save_question", "history", "stable", "assemble",
                "to_upstream", "loopback_ms"):
        if key in down:
            lines.append(f"| ollama down (fallback): {key} | {down[key]['p50']} | "
                         f"{down[key]['p95']} |")
    relay_row = result["relay"]
    lines += [
        "", f"Ollama down (closed port, production client and breaker): a turn spends "
        f"{notice['p50']} ms (p50) / {notice['p95']} ms (p95) noticing it (the failed "
        f"`embed` of fallback turns; modes {down['modes']}), and the whole fallback turn's "
        f"overhead is {down['overhead_ms']['p50']} ms p50. Outside a turn: the first call to "
        f"a closed port fails in {result['notice_down']['first_ms']} ms, later ones in "
        f"{result['notice_down']['breaker_open']['p50']} ms (breaker open).",
        "", f"Relay: {relay_row['chunks']} chunks, direct {relay_row['direct_s']} s, through "
        f"/api/chat SSE {relay_row['via_chatsvc_s']} s: "
        f"{relay_row['overhead_per_chunk_ms']} ms extra per chunk. In process, without HTTP: "
        f"the official openai client alone takes "
        f"{result['relay_in_process']['openai_client_ms_per_chunk']} ms per chunk, chatsvc's "
        f"Relay on top of it {result['relay_in_process']['relay_ms_per_chunk']} ms.", "",
        "Goals: overhead p50 <= 10 ms, p95 <= 25 ms; Ollama down adds <= 5 ms.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--relay-chunks", type=int, default=2000)
    parser.add_argument("--service-ms", type=float, default=20.0,
                        help="the embedding service's time per query (default 20)")
    args = parser.parse_args()
    publish("chat_bench", args, run, markdown)


def publish(name: str, args: argparse.Namespace, run, render) -> None:
    """Run the bench and write `name`.json/.md in evals/results (its machine and times in
    `note`: describe() reads the load average when the run started and at its end)."""
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    result = run(args)
    result["note"] = (f"{describe()}, {stamp}; real app over loopback HTTP, scripted "
                      "upstream, local embedder.")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(render(result))
    print(render(result))


if __name__ == "__main__":
    main()
