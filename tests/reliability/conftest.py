"""One real `chatsvc serve` child process for the whole fault suite.

It talks to a misbehaving Ollama (tests/reliability/ollama_server.py) and to the
scripted LLM upstream, both real loopback servers in this process whose
behaviour each test switches. Every test checks the child's log for tracebacks.
`two_workers` is one service with two workers on one SQLite file, `two_replicas`
two services on one PostgreSQL database (or one SQLite file).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import ScriptedUpstream, ServiceProcess
from tests._pg import drop_schema, new_schema
from tests.chatsvc.chat.conftest import settings  # noqa: F401 (in-process tests)
from tests.reliability.ollama_server import OllamaServer

# Timeouts of the child, kept short so every failure costs well under a few seconds.
LLM_TIMEOUT = 3.0  # answers not streamed
FIRST_TOKEN_TIMEOUT = 3.0
STALL_TIMEOUT = 3.0
EMBED_TIMEOUT = 0.5
EMBED_RETRIES = 1
SEND_TIMEOUT = 0.5


@pytest.fixture(scope="package")
def ollama():
    server = OllamaServer(slow_seconds=EMBED_TIMEOUT * 4).start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def scripted():
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture(scope="package")
def service(tmp_path_factory, ollama, scripted):
    root = tmp_path_factory.mktemp("service")
    child = ServiceProcess(root / "data", {
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url,
        "LLM_TIMEOUT": str(LLM_TIMEOUT),
        "LLM_FIRST_TOKEN_TIMEOUT": str(FIRST_TOKEN_TIMEOUT),
        "LLM_STALL_TIMEOUT": str(STALL_TIMEOUT),
        "LLM_RETRY_BACKOFF": "0.01",
        "CHATSVC_EMBED_TIMEOUT": str(EMBED_TIMEOUT),
        "CHATSVC_EMBED_RETRIES": str(EMBED_RETRIES),
        "CHATSVC_EMBED_RETRY_BACKOFF": "0.05",
        "CHATSVC_EMBED_BREAKER_COOLDOWN": "0.2",
        "CHATSVC_HEALTH_CACHE_SECONDS": "0.05",
        "CHATSVC_SSE_SEND_TIMEOUT": str(SEND_TIMEOUT),
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        # Rows a fault left unembedded are retried within a second, not ten (`fault`
        # waits for them before each test).
        "CHATSVC_INDEX_INTERVAL": "1",
    })
    child.tokens = {"alice": child.add_user("alice"), "bob": child.add_user("bob"),
                    "root": child.add_user("root", admin=True)}
    with child:
        yield child


@pytest.fixture
def two_workers_env() -> dict[str, str]:
    return {}


@pytest.fixture
def two_workers(tmp_path, ollama, scripted, two_workers_env):
    """`chatsvc serve --workers 2` on one SQLite file with six users (`child.tokens`);
    a test module adds settings by overriding the `two_workers_env` fixture."""
    child = ServiceProcess(tmp_path / "data", {
        "CHATSVC_WORKERS": "2",
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url,
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        **two_workers_env,
    })
    child.tokens = [child.add_user(f"user{i}") for i in range(6)]
    with child:
        yield child


@dataclass
class Replicas:
    """Two `chatsvc serve` processes, each with its own port, on one database, as
    behind a load balancer; `tokens` by user name."""

    a: ServiceProcess
    b: ServiceProcess
    tokens: dict[str, str]

    def client(self, replica: ServiceProcess, user: str = "alice") -> httpx.Client:
        return httpx.Client(base_url=replica.url, timeout=30,
                            headers={"Authorization": f"Bearer {self.tokens[user]}"})


@pytest.fixture
def replicas_ollama():
    """The replicas' own loopback Ollama; its `slow` mode makes each request take
    0.25 s, so that a job of a few dozen chunks takes seconds."""
    server = OllamaServer(slow_seconds=0.25).start()
    yield server
    server.stop()


@pytest.fixture
def two_replicas_env() -> dict[str, str]:
    return {}


@pytest.fixture
def two_replicas_backend() -> str:
    """"postgresql": a fresh schema of the session's server, each replica its own data
    dir; "sqlite": one data dir, so one SQLite file (what `--workers` share)."""
    return "postgresql"


@contextlib.contextmanager
def _replica_database(request, backend: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Each replica's data dir and database settings, per replica name."""
    if backend == "sqlite":
        yield {name: {"CHATSVC_DATA_DIR": str(tmp_path / "data")} for name in "ab"}
        return
    server = request.getfixturevalue("pg_server_url")
    schema, url = new_schema(server)
    try:
        yield {name: {"CHATSVC_DATA_DIR": str(tmp_path / name / "data"),
                      "CHATSVC_DATABASE_URL": url} for name in "ab"}
    finally:
        drop_schema(server, schema)


@pytest.fixture
def two_replicas(request, tmp_path, replicas_ollama, scripted, two_replicas_env,
                 two_replicas_backend):
    """`Replicas` with users alice and bob; a test module adds settings by overriding
    the `two_replicas_env` fixture, and picks the database with `two_replicas_backend`.
    Each replica's log is checked for tracebacks at the end."""
    env = {
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": replicas_ollama.url,
        "LLM_BASE_URL": scripted.base_url,
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        "CHATSVC_HEALTH_CACHE_SECONDS": "0.05",
        **two_replicas_env,
    }
    with _replica_database(request, two_replicas_backend, tmp_path) as databases:
        a, b = (ServiceProcess(Path(databases[name]["CHATSVC_DATA_DIR"]),
                               {**env, **databases[name]}) for name in "ab")
        try:
            tokens = {name: a.add_user(name) for name in ("alice", "bob")}
            with ThreadPoolExecutor(2) as starting:  # both start up at the same time
                list(starting.map(ServiceProcess.start, (a, b)))
            yield Replicas(a, b, tokens)
            for replica in (a, b):
                assert replica.crashes() == [], replica.log()
        finally:
            a.stop()
            b.stop()


def auth(service: ServiceProcess, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {service.tokens[name]}"}


@pytest.fixture
def fault(service, ollama, scripted):
    """Healthy dependencies at the start; no traceback in the child's log at the end."""
    if not ollama.running:
        ollama.start()
    ollama.mode = "ok"
    scripted._queue.clear()  # nothing left over from an earlier test
    # A fresh health check closes an embeddings breaker an earlier fault left open; then
    # the messages earlier faults left unembedded are embedded in the background, which
    # must be over before a test that checks its request changed nothing.
    deadline = time.monotonic() + 15
    while not _settled(httpx.get(f"{service.url}/health",
                                 headers=auth(service, "root")).json()["checks"]):
        assert time.monotonic() < deadline, "embeddings did not recover"
        time.sleep(0.05)
    offset = service.log_size()
    yield service
    time.sleep(0.05)  # let the child finish logging the turn
    assert service.crashes(offset) == [], service.log(offset)


def _settled(checks: dict) -> bool:
    return checks["embeddings"]["ok"] and not any(checks["embeddings_waiting"]["counts"].values())


@dataclass
class Turn:
    events: list[tuple[str, dict]]
    seconds: float  # request sent -> stream ended
    first_event_seconds: float

    @property
    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]

    @property
    def meta(self) -> dict:
        assert self.events[0][0] == "meta", self.events
        return self.events[0][1]

    @property
    def last(self) -> tuple[str, dict]:
        return self.events[-1]


def chat_turn(service: ServiceProcess, user: str, message: str, **body) -> Turn:
    started = time.monotonic()
    first = None
    events = []
    with httpx.Client(base_url=service.url, headers=auth(service, user), timeout=30) as http, \
            connect_sse(http, "POST", "/api/chat", json={"message": message, **body}) as source:
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            first = first or time.monotonic() - started
            events.append((event.event, json.loads(event.data)))
    return Turn(events, time.monotonic() - started, first or 0.0)


def stored(service: ServiceProcess, user: str, conversation_id: str) -> list[tuple[str, str, str]]:
    response = httpx.get(f"{service.url}/api/conversations/{conversation_id}",
                         headers=auth(service, user))
    assert response.status_code == 200, response.text
    return [(m["role"], m["content"], m["status"]) for m in response.json()["messages"]]
