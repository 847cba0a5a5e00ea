"""Real JavaScript clients on /v1: the official `openai` package for Node and the
Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`), each streaming turns for an end user
through a service key, and seeing what the user said remembered in a new conversation
(node_modules: installed by scripts/test.sh from js/package-lock.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from chatsvc.testing import Reply
from tests.chatsvc.extraction.conftest import answer

JS = Path(__file__).parent / "js"
CLIENTS = ["openai", "ai-sdk"]


def run_client(client: str, *, base_url: str, api_key: str, model: str, messages: list[dict],
               headers: dict | None = None, user: str | None = None):
    """Run one streamed turn with the JavaScript client (its process, finished)."""
    node = shutil.which("node")
    if node is None or not (JS / "node_modules").is_dir():
        pytest.fail("node and tests/chatsvc/chat/js/node_modules are needed: run "
                    "scripts/test.sh (it installs them), or `npm ci` in that folder",
                    pytrace=False)
    turn = {"baseURL": f"{base_url}/v1", "apiKey": api_key, "model": model,
            "messages": messages, "headers": headers or {}, **({"user": user} if user else {})}
    return subprocess.run([node, "stream_turn.mjs", client, json.dumps(turn)], cwd=JS,
                          capture_output=True, text=True, timeout=120)


def stream_turn(client: str, **turn) -> str:
    """The text the JavaScript client assembled from chatsvc's stream."""
    done = run_client(client, **turn)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])["text"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_js_client_acts_for_an_end_user_who_is_remembered(client, live, live_client,
                                                            services, upstream, settings):
    _, key = services.stores.users.add("webapp", kind="service")
    said = "My cat is called Miso."
    turn = {"base_url": live, "api_key": key, "model": settings.llm_model,
            "headers": {"X-Chatsvc-User": "user-17"}}
    upstream.script(Reply(chunks=["Hello", " Miso", "!"]))
    assert stream_turn(client, **turn, messages=[{"role": "user", "content": said}]) == (
        "Hello Miso!")
    assert upstream.requests[0].body["stream"] is True
    acting = {"Authorization": f"Bearer {key}", "X-Chatsvc-User": "user-17"}
    upstream.script(answer([("core", "Has a cat called Miso", "m1", said)]))
    assert live_client.post("/api/facts/extract", headers=acting).json()["new_facts"] == 1

    upstream.script(Reply(chunks=["Miso", "."]))
    question = [{"role": "user", "content": "What is my cat called?"}]
    assert stream_turn(client, **turn, messages=question) == "Miso."
    assert "Has a cat called Miso" in json.dumps(upstream.requests[-1].body["messages"])
    assert len(live_client.get("/api/conversations", headers=acting).json()[
        "conversations"]) == 2  # both turns stored, each a conversation of its own


@pytest.mark.parametrize("client", CLIENTS)
def test_a_js_client_sees_a_bad_token_refused(client, live, upstream, settings):
    done = run_client(client, base_url=live, api_key="nope.nope", model=settings.llm_model,
                      messages=[{"role": "user", "content": "Hi"}])
    assert done.returncode != 0 and "invalid or revoked token" in done.stderr
    assert upstream.requests == []
