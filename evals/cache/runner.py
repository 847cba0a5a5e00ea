"""Replay scenarios through the real service (in-process app) for each layout.

One data directory gets every scenario's user and fixtures (facts, memories,
documents, a generated fact sheet) through the HTTP API, then a copy of it serves
each layout, so the layouts see the same data. The service's LLM_BASE_URL is a
recording proxy in front of the chosen upstream. Simulated time: each turn runs
at its scenario time (time-machine), so snapshot pinning, the user's date and the
provider TTLs behave as they would over a real day.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import time_machine
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.embeddings import LocalEmbedder
from chatsvc.testing import Reply, ScriptedUpstream
from evals.cache.metrics import Meter
from evals.cache.providers import Provider
from evals.cache.proxy import Exchange, RecordingProxy
from evals.cache.scenarios import Scenario, Turn

log = logging.getLogger("evals.cache")

LAYOUTS = ("system_rag", "before_conversation", "before_last_user")


@dataclass
class Upstream:
    """Where the proxy forwards: a base URL (+ key, model); `scripted` when it is ours."""

    base_url: str
    model: str
    api_key: str | None = None
    scripted: ScriptedUpstream | None = None
    max_tokens: int | None = None


@dataclass
class Replay:
    scenarios: list[Scenario]
    layouts: tuple[str, ...]
    providers: dict[str, Provider]
    upstream: Upstream
    work_dir: Path
    max_turns: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    # Called after each layout with its (row, upstream exchange) pairs: the cold-TTFT probe.
    after_layout: Callable[[str, list[tuple[dict, Exchange]]], None] | None = None


class MemoEmbedder:
    """The real local embedder, remembering query vectors: every layout replays the same
    questions, so each is embedded once (same vectors, a third of the work)."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.model, self.dim = inner.model, inner.dim
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
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",  # no background LLM calls in the recording
        "CHATSVC_CONTEXT_STRATEGY": layout,
        "LLM_BASE_URL": upstream_url,
        "LLM_MODEL": model,
        "LLM_RETRIES": "0",
    })


def _ok(response, what: str) -> dict:
    if response.status_code >= 300:
        raise RuntimeError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    return response.json() if response.content else {}


def apply_event(client: TestClient, headers: dict, event: dict) -> None:
    if event["type"] == "add_facts":
        for fact in event["facts"]:
            _ok(client.post("/api/facts", json=fact, headers=headers), "add fact")
    elif event["type"] == "generate_fact_sheet":
        _ok(client.post("/api/fact-sheet/generate", headers=headers), "generate fact sheet")
    elif event["type"] == "write_memory":
        memory = {"scope": "global", **event["memory"]}
        _ok(client.post("/api/memory", json=memory, headers=headers), "write memory")


def add_fixtures(client: TestClient, services: Services, scenario: Scenario) -> dict:
    """The scenario's user and fixtures, a day before its first turn. Returns auth headers."""
    _, token = services.users.add(scenario.user_name, timezone=scenario.timezone)
    headers = {"Authorization": f"Bearer {token}"}
    apply_event(client, headers, {"type": "add_facts", "facts": scenario.facts})
    for memory in scenario.memories:
        apply_event(client, headers, {"type": "write_memory", "memory": memory})
    for doc in scenario.docs:
        _ok(client.post("/api/knowledge/documents", json=doc, headers=headers), "add document")
    apply_event(client, headers, {"type": "generate_fact_sheet"})
    return headers


def _exchange_for(proxy: RecordingProxy, mark: int, question: str) -> Exchange:
    for exchange in reversed(proxy.exchanges[mark:]):
        messages = exchange.body.get("messages") or []
        if messages and messages[-1].get("content") == question:
            return exchange
    raise RuntimeError("the chat turn sent no upstream request with the question last")


def _chunks(text: str, size: int = 24) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class Session:
    """One layout: a service over its own copy of the fixtures."""

    def __init__(self, replay: Replay, layout: str, data_dir: Path, proxy: RecordingProxy,
                 embedder: MemoEmbedder) -> None:
        self.replay, self.layout, self.proxy = replay, layout, proxy
        settings = service_settings(data_dir, layout, proxy.base_url,
                                    replay.upstream.model, replay.env)
        self.services = Services.open(settings, embedder=embedder)
        self.client = TestClient(create_app(services=self.services))

    def __enter__(self) -> Session:
        self.client.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.client.__exit__(None, None, None)
        self.services.db.close()

    def turn(self, scenario: Scenario, headers: dict, turn: Turn, conversation: str | None,
             meter: Meter, index: int) -> tuple[dict, Exchange]:
        when = scenario.at(turn)
        with time_machine.travel(when, tick=True):
            for event in turn.events:
                apply_event(self.client, headers, event)
            if self.replay.upstream.scripted is not None:
                self.replay.upstream.scripted.script(Reply(chunks=_chunks(turn.assistant)))
            mark = len(self.proxy.exchanges)
            body = {"message": turn.user, "stream": False}
            if conversation:
                body["conversation_id"] = conversation
            answer = _ok(self.client.post("/api/chat", json=body, headers=headers), "chat")
        exchange = _exchange_for(self.proxy, mark, turn.user)
        row = meter.measure(exchange.body["messages"], answer["content"],
                            at=(when - scenario.start).total_seconds())
        usage = answer.get("usage") or {}
        row.update(
            scenario=scenario.id, kind=scenario.kind, language=scenario.language,
            layout=self.layout, turn=index, at=when.isoformat(),
            conversation_id=answer["conversation_id"], mode=answer["mode"],
            prefix_hash=answer["prefix_hash"], reported_cached=usage.get("cached_tokens"),
            upstream_prompt_tokens=usage.get("prompt_tokens"),
            ttft_seconds=exchange.ttft_seconds,
        )
        return row, exchange

    def conversation(self, scenario: Scenario, headers: dict) -> list[tuple[dict, Exchange]]:
        meter, pairs, conversation = Meter(self.replay.providers), [], None
        for index, turn in enumerate(scenario.turns[: self.replay.max_turns], start=1):
            row, exchange = self.turn(scenario, headers, turn, conversation, meter, index)
            conversation = row["conversation_id"]
            pairs.append((row, exchange))
        return pairs


def prepare(replay: Replay, template: Path, embedder: MemoEmbedder) -> dict[str, dict]:
    """Fixtures for every scenario in `template`; scenario id -> auth headers."""
    settings = service_settings(template, LAYOUTS[1], "http://127.0.0.1:9/v1",
                                replay.upstream.model, replay.env)
    services = Services.open(settings, embedder=embedder)
    headers = {}
    try:
        with TestClient(create_app(services=services)) as client:
            for scenario in replay.scenarios:
                with time_machine.travel(scenario.start - timedelta(days=1), tick=True):
                    headers[scenario.id] = add_fixtures(client, services, scenario)
    finally:
        services.db.close()
    return headers


def run(replay: Replay) -> tuple[list[dict], dict[str, float]]:
    """Every scenario under every layout: (rows, seconds per phase)."""
    embedder = MemoEmbedder(LocalEmbedder())
    timings: dict[str, float] = {}
    started = time.perf_counter()
    template = replay.work_dir / "fixtures"
    headers = prepare(replay, template, embedder)
    timings["fixtures"] = time.perf_counter() - started
    rows: list[dict] = []
    with RecordingProxy(replay.upstream.base_url, api_key=replay.upstream.api_key,
                        max_tokens=replay.upstream.max_tokens) as proxy:
        for layout in replay.layouts:
            started = time.perf_counter()
            data_dir = replay.work_dir / layout
            shutil.copytree(template, data_dir)
            pairs = []
            with Session(replay, layout, data_dir, proxy, embedder) as session:
                for scenario in replay.scenarios:
                    log.info("%s: %s", layout, scenario.id)
                    pairs += session.conversation(scenario, headers[scenario.id])
            if replay.after_layout is not None:
                replay.after_layout(layout, pairs)
            rows += [row for row, _ in pairs]
            timings[layout] = time.perf_counter() - started
    return rows, timings
