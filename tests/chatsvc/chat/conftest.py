"""Chat fixtures: the scripted upstream on loopback, settings pointing at it, SSE helpers."""

from __future__ import annotations

import json

import pytest
from httpx_sse import connect_sse

from chatsvc import Settings
from chatsvc.testing import ScriptedUpstream


@pytest.fixture
def upstream():
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def settings(isolated_env, upstream, monkeypatch) -> Settings:
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("LLM_RETRY_BACKOFF", "0.01")
    return Settings.from_env()


def read_events(client, headers, body: dict) -> list[tuple[str, dict]]:
    """POST /api/chat and collect (event, data) pairs until the stream ends."""
    with connect_sse(client, "POST", "/api/chat", json=body, headers=headers) as source:
        assert source.response.status_code == 200, source.response.read()
        return [(e.event, json.loads(e.data)) for e in source.iter_sse()]


def chat(client, headers, message: str, conversation_id: str | None = None):
    body = {"message": message}
    if conversation_id:
        body["conversation_id"] = conversation_id
    return read_events(client, headers, body)
