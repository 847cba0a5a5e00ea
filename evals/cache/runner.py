"""Replay scenarios through the real service for each layout.

In-process (`run`): one data directory gets every scenario's user and fixtures
(facts, memories, documents, a generated fact sheet) through the HTTP API, then
a copy of it serves each layout, so the layouts see the same data. The app's
LLM_BASE_URL is a recording proxy in front of the chosen upstream. Simulated
time: each turn runs at its scenario time (time-machine), so snapshot pinning,
the user's date and the provider TTLs behave as they would over a real day.

A running service (`run_remote`): the caller's token is the user, the proxy
listens on a fixed port the service's LLM_BASE_URL must point at, turns run in
real time, and what a scenario created is deleted after it.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
import time_machine
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.embeddings import LocalEmbedder
from chatsvc.llm import Usage, parse_usage
from chatsvc.testing import Reply, ScriptedUpstream, ToolCall, wait_for_job
from context.assemble import RETAINING
from evals.cache.metrics import Meter
from evals.cache.providers import Provider
from evals.cache.proxy import Exchange, RecordingProxy
from evals.cache.scenarios import Scenario, Turn

log = logging.getLogger("evals.cache")

LAYOUTS = ("system_rag", "before_conversation", "before_last_user", "in_history")


@dataclass
class Upstream:
    """Where the proxy forwards: a base URL (+ key, model); `scripted` when it is ours."""

    base_url: str
    model: str
    api_key: str | None = None
    scripted: ScriptedUpstream | None = None
    max_tokens: int | None = None
    fold_system: bool = False  # a chat format without a system role (local Gemma)


@dataclass
class Replay:
    scenarios: list[Scenario]
    layouts: tuple[str, ...]
    providers: dict[str, Provider]
    upstream: Upstream
    work_dir: Path | None  # in-process runs: where the data directories go
    max_turns: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    # Called after each layout with its (row, upstream exchange) pairs: the cold-TTFT probe.
    after_layout: Callable[[str, list[tuple[dict, Exchange]]], None] | None = None
    embedder: LocalEmbedder | None = None  # default: a new in-process model
    # Scripted upstream: every second turn first calls search_knowledge (server-side
    # tools), so the report measures conversations with tool turns.
    tool_turns: bool = False
    # "api": turns on /api/chat (the server keeps the history); "v1": on
    # /v1/chat/completions, the client sending the whole conversation each time.
    via: str = "api"


class MemoEmbedder:
    """The real local embedder, remembering query vectors: every layout replays the same
    questions, so each is embedded once (same vectors, a third of the work)."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.model, self.dim = inner.model, inner.dim
        self.shares_cores = inner.shares_cores
        self._queries: dict[str, list[float]] = {}

    async def embed_query(self, text: str) -> list[float]:
        if text not in self._queries:
            self._queries[text] = await self.inner.embed_query(text)
        return self._queries[text]

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self.inner.embed_documents(texts)

    async def check(self) -> tuple[bool, str]:
        return await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()


def service_settings(data_dir: Path, layout: str, upstream_url: str, model: str,
                     env: dict[str, str]) -> Settings:
    return Settings.from_env({
        **env,
        "CHATSVC_DATA_DIR": str(data_dir),
        "CHATSVC_EMBEDDINGS": "local",
        "CHATSVC_LOCAL_MODELS": "off",
        # No background LLM calls (tiers, fact extraction) in the recording.
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        "CHATSVC_EXTRACT_INTERVAL": "0",
        "CHATSVC_CONTEXT_STRATEGY": layout,
        "LLM_BASE_URL": upstream_url,
        "LLM_MODEL": model,
        "LLM_RETRIES": "0",
    })


def _ok(response, what: str) -> dict:
    if response.status_code >= 300:
        raise RuntimeError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    return response.json() if response.content else {}


def apply_event(client: httpx.Client, headers: dict, event: dict) -> list[str]:
    """Apply one scenario event; returns the paths that delete what it created."""
    created = []
    if event["type"] == "add_facts":
        for fact in event["facts"]:
            made = _ok(client.post("/api/facts", json=fact, headers=headers), "add fact")
            created.append(f"/api/facts/{made['id']}")
    elif event["type"] == "generate_fact_sheet":
        _ok(client.post("/api/fact-sheet/generate", headers=headers), "generate fact sheet")
    elif event["type"] == "write_memory":
        memory = {"scope": "global", **event["memory"]}
        made = _ok(client.post("/api/memory", json=memory, headers=headers), "write memory")
        created.append(f"/api/memory/{made['id']}")
    return created


def add_fixtures(client: httpx.Client, headers: dict, scenario: Scenario) -> list[str]:
    """The scenario's fixtures for the user of `headers`; returns their delete paths."""
    created = apply_event(client, headers, {"type": "add_facts", "facts": scenario.facts})
    for memory in scenario.memories:
        created += apply_event(client, headers, {"type": "write_memory", "memory": memory})
    for doc in scenario.docs:
        made = _ok(client.post("/api/knowledge/documents", json=doc, headers=headers),
                   "add document")
        wait_for_job(client, headers, made["job_id"])  # vectors before the turns
        created.append(f"/api/knowledge/{made['id']}")
    apply_event(client, headers, {"type": "generate_fact_sheet"})
    return created


def _exchanges_for(proxy: RecordingProxy, mark: int, question: str) -> list[Exchange]:
    """The turn's upstream requests: the question's, then one per tool round."""
    found = [exchange for exchange in proxy.exchanges[mark:]
             if any(m.get("role") == "user" and m.get("content") == question
                    for m in exchange.body.get("messages") or [])]
    if not found:
        raise RuntimeError("the chat turn sent no upstream request with the question")
    return found


def _script(scripted: ScriptedUpstream, turn: Turn, index: int, tool_turns: bool) -> None:
    if tool_turns and index % 2 == 0:
        query = json.dumps({"query": turn.user[:500]})
        scripted.script(Reply(chunks=[], tool_calls=[ToolCall("search_knowledge", query)]))
    scripted.script(Reply(chunks=_chunks(turn.assistant)))


def _chunks(text: str, size: int = 24) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class Session:
    """Conversations of one layout on one service (in-process app or a running URL)."""

    def __init__(self, replay: Replay, layout: str, client: httpx.Client,
                 proxy: RecordingProxy, *, travel: bool) -> None:
        self.replay, self.layout, self.client, self.proxy = replay, layout, client, proxy
        self.travel = travel
        self.created: list[str] = []  # delete paths of what events created

    def _clock(self, when):
        return time_machine.travel(when, tick=True) if self.travel else nullcontext()

    def turn(self, scenario: Scenario, headers: dict, turn: Turn, conversation: str | None,
             meter: Meter, index: int) -> list[tuple[dict, Exchange]]:
        """One row per upstream request of the turn (several when it ran tools)."""
        when = scenario.at(turn)
        with self._clock(when):
            for event in turn.events:
                self.created += apply_event(self.client, headers, event)
            if self.replay.upstream.scripted is not None:
                _script(self.replay.upstream.scripted, turn, index, self.replay.tool_turns)
            mark = len(self.proxy.exchanges)
            if self.replay.via == "v1":
                answer = self._ask_v1(headers, turn.user)
            else:
                body = {"message": turn.user, "stream": False}
                if conversation:
                    body["conversation_id"] = conversation
                answer = _ok(self.client.post("/api/chat", json=body, headers=headers), "chat")
        exchanges = _exchanges_for(self.proxy, mark, turn.user)
        pairs = []
        for round_, exchange in enumerate(exchanges):
            last = round_ == len(exchanges) - 1
            # A tool round's own reply is its calls, which the next request carries.
            row = meter.measure(exchange.body["messages"], answer["content"] if last else "",
                                at=(when - scenario.start).total_seconds())
            usage = answer.get("usage") or {}
            if len(exchanges) > 1:  # the answer's usage sums the requests: each its own
                usage = (parse_usage(exchange.usage) or Usage(None, None, None)).as_json()
            row.update(
                scenario=scenario.id, kind=scenario.kind, language=scenario.language,
                layout=self.layout, turn=index, round=round_, at=when.isoformat(),
                conversation_id=answer["conversation_id"], mode=answer["mode"],
                prefix_hash=answer["prefix_hash"], reported_cached=usage.get("cached_tokens"),
                upstream_prompt_tokens=usage.get("prompt_tokens"),
                ttft_seconds=exchange.ttft_seconds, tool_calls=len(answer.get("tool_calls", [])),
            )
            pairs.append((row, exchange))
        return pairs

    def _ask_v1(self, headers: dict, question: str) -> dict:
        """The turn on /v1 (the conversation's messages so far, then the question), in
        /api/chat's answer shape."""
        self.messages.append({"role": "user", "content": question})
        body = {"model": self.replay.upstream.model, "messages": self.messages}
        answer = _ok(self.client.post("/v1/chat/completions", json=body, headers=headers), "v1")
        content = answer["choices"][0]["message"]["content"]
        self.messages.append({"role": "assistant", "content": content})
        usage = answer["usage"]
        return {**answer["chatsvc"], "content": content, "usage": {
            "prompt_tokens": usage["prompt_tokens"],
            "cached_tokens": usage.get("prompt_tokens_details", {}).get("cached_tokens")}}

    def conversation(self, scenario: Scenario, headers: dict) -> list[tuple[dict, Exchange]]:
        meter = Meter(self.replay.providers, blocks_in_history=self.layout in RETAINING)
        pairs, conversation = [], None
        self.messages: list[dict] = []  # the /v1 client's conversation
        for index, turn in enumerate(scenario.turns[: self.replay.max_turns], start=1):
            rounds = self.turn(scenario, headers, turn, conversation, meter, index)
            conversation = rounds[0][0]["conversation_id"]
            pairs += rounds
        return pairs


@contextmanager
def local_app(replay: Replay, layout: str, data_dir: Path, upstream_url: str,
              embedder: MemoEmbedder) -> Iterator[TestClient]:
    """The real app in-process, over `data_dir`, with `layout` as its placement strategy."""
    settings = service_settings(data_dir, layout, upstream_url, replay.upstream.model,
                                replay.env)
    services = Services.open(settings, embedder=embedder)
    try:
        with TestClient(create_app(services=services)) as client:
            yield client
    finally:
        services.stores.db.close()


def prepare(replay: Replay, template: Path, embedder: MemoEmbedder) -> dict[str, dict]:
    """Users and fixtures of every scenario in `template`; scenario id -> auth headers."""
    headers = {}
    with local_app(replay, LAYOUTS[1], template, "http://127.0.0.1:9/v1", embedder) as client:
        services = client.app.state.services
        for scenario in replay.scenarios:
            _, token = services.stores.users.add(scenario.user_name, timezone=scenario.timezone)
            headers[scenario.id] = {"Authorization": f"Bearer {token}"}
            with time_machine.travel(scenario.start - timedelta(days=1), tick=True):
                add_fixtures(client, headers[scenario.id], scenario)
    return headers


def _proxy(replay: Replay, port: int = 0) -> RecordingProxy:
    return RecordingProxy(replay.upstream.base_url, api_key=replay.upstream.api_key,
                          max_tokens=replay.upstream.max_tokens, port=port,
                          fold_system_messages=replay.upstream.fold_system)


def _finish_layout(replay: Replay, layout: str, pairs: list) -> list[dict]:
    if replay.after_layout is not None:
        replay.after_layout(layout, pairs)
    return [row for row, _ in pairs]


def run(replay: Replay) -> tuple[list[dict], dict[str, float]]:
    """Every scenario under every layout, in-process: (rows, seconds per phase)."""
    embedder = MemoEmbedder(replay.embedder or LocalEmbedder())
    timings: dict[str, float] = {}
    started = time.perf_counter()
    template = replay.work_dir / "fixtures"
    headers = prepare(replay, template, embedder)
    timings["fixtures"] = time.perf_counter() - started
    rows: list[dict] = []
    with _proxy(replay) as proxy:
        for layout in replay.layouts:
            started = time.perf_counter()
            shutil.copytree(template, replay.work_dir / layout)
            pairs = []
            with local_app(replay, layout, replay.work_dir / layout, proxy.base_url,
                           embedder) as client:
                session = Session(replay, layout, client, proxy, travel=True)
                for scenario in replay.scenarios:
                    log.info("%s: %s", layout, scenario.id)
                    pairs += session.conversation(scenario, headers[scenario.id])
            rows += _finish_layout(replay, layout, pairs)
            timings[layout] = time.perf_counter() - started
    return rows, timings


def run_remote(replay: Replay, client: httpx.Client, token: str,
               proxy: RecordingProxy) -> tuple[list[dict], dict[str, float]]:
    """Every scenario on a running service (one layout: the one it is configured with).

    `proxy` must be what the service's LLM_BASE_URL points at. Turns run in real time;
    fixtures and what events create are deleted after each scenario.
    """
    headers = {"Authorization": f"Bearer {token}"}
    layout = replay.layouts[0]
    session = Session(replay, layout, client, proxy, travel=False)
    started, pairs = time.perf_counter(), []
    for scenario in replay.scenarios:
        log.info("%s (running service): %s", layout, scenario.id)
        created = add_fixtures(client, headers, scenario)
        try:
            pairs += session.conversation(scenario, headers)
        finally:
            for path in created + session.created:
                client.delete(path, headers=headers)
            session.created = []
    return _finish_layout(replay, layout, pairs), {layout: time.perf_counter() - started}
