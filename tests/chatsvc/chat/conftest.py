"""Chat fixtures: the scripted upstream on loopback, settings pointing at it, SSE helpers."""

from __future__ import annotations

import base64
import json

import pytest
from httpx_sse import connect_sse

from chatsvc import Settings
from context import render
from tests.chatsvc.knowledge_jobs import add_document

# A real 1x1 PNG, as bytes and as a data URL; an image by reference.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q"
                       "DwADhgGAWjR9awAAAABJRU5ErkJggg==")
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
HTTPS_URL = "https://images.example.com/cat.jpg"


@pytest.fixture
def settings(upstream_settings) -> Settings:
    return upstream_settings


@pytest.fixture
def vision() -> str:
    """LLM_VISION for `vision_settings` (a test module may override it)."""
    return "true"


@pytest.fixture
def vision_settings(upstream_settings, monkeypatch, vision) -> Settings:
    """The image tests' settings: small limits, so they are quick to reach."""
    monkeypatch.setenv("LLM_VISION", vision)
    monkeypatch.setenv("CHATSVC_MAX_IMAGES", "2")
    monkeypatch.setenv("CHATSVC_MAX_IMAGE_BYTES", "1000")
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


def seed_user_data(client, headers, *, document: bool = False) -> None:
    """Real data through the real routes: facts, a fact sheet, memory, optionally a
    knowledge document."""
    for category, fact in [("core", "Lives in Lisbon with a cat called Miso"),
                           ("technical", "Writes Python and SQLite code every day"),
                           ("project", "Is building chatsvc, a streaming chat backend")]:
        assert client.post("/api/facts", json={"category": category, "fact": fact},
                           headers=headers).status_code == 201
    assert client.post("/api/fact-sheet/generate", headers=headers).status_code == 201
    memory = {"content": "Answer briefly, in plain words", "type": "preference",
              "scope": "global"}
    assert client.post("/api/memory", json=memory, headers=headers).status_code == 201
    if document:
        doc = {"title": "Deploy notes",
               "content": "chatsvc is deployed with uvicorn behind nginx."}
        add_document(client, headers, doc)  # and wait for its vectors


def message_block(body: dict) -> str:
    """The current turn's per-message block in an upstream request body ('' if none):
    the user message the fixed acknowledgement answers, just before the question
    (in_history, before_last_user) or just after the stable prefix (before_conversation)."""
    messages, ack = body["messages"], render.template("ack")
    for block, answer in ((-3, -2), (1, 2)):
        if len(messages) > answer >= -len(messages) and messages[answer]["content"] == ack:
            return messages[block]["content"]
    return ""


def publish_posts(services, count: int = 4) -> None:
    """Published posts straight into the store (the fallback reads only the store)."""
    for i in range(count):
        services.stores.posts.create(author_id=None, title=f"Post {i}", content=f"Body {i}.",
                              excerpt=f"Excerpt {i}", published=True)


@pytest.fixture
def live(services):
    """The app on a real loopback port (uvicorn in a thread): real disconnects, real clients."""
    import threading
    import time

    import uvicorn

    from chatsvc import create_app
    from chatsvc.local_models import free_port

    port = free_port()
    config = uvicorn.Config(create_app(services=services), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def live_client(live):
    """An HTTP client on the live server: a test that needs `live` uses this rather than
    `client`, which would run a second app (and lifespan) over the same services."""
    import httpx

    with httpx.Client(base_url=live, timeout=30) as client:
        yield client


@pytest.fixture
def oai(live, alice):
    """The official openai client on /v1, as alice."""
    import openai

    token = alice[1]["Authorization"].split()[1]
    client = openai.OpenAI(base_url=f"{live}/v1", api_key=token, max_retries=0)
    yield client
    client.close()
