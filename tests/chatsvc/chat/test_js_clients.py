"""Real JavaScript clients on /v1: the official `openai` package for Node and the
Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`), each streaming a turn through
chatsvc (node_modules: installed by scripts/test.sh from js/package-lock.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import seed_user_data

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
def test_a_js_client_streams_an_answer_over_the_users_memory(client, live, live_client,
                                                             alice, upstream, settings):
    seed_user_data(live_client, alice[1])
    upstream.script(Reply(chunks=["Miso", " is", " fine."]))
    token = alice[1]["Authorization"].split()[1]
    text = stream_turn(client, base_url=live, api_key=token, model=settings.llm_model,
                       messages=[{"role": "user", "content": "How is my cat?"}])
    assert text == "Miso is fine."
    [request] = upstream.requests
    assert request.body["stream"] is True
    assert "Lives in Lisbon with a cat called Miso" in request.body["messages"][0]["content"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_js_client_sees_a_bad_token_refused(client, live, upstream, settings):
    done = run_client(client, base_url=live, api_key="nope.nope", model=settings.llm_model,
                      messages=[{"role": "user", "content": "Hi"}])
    assert done.returncode != 0 and "invalid or revoked token" in done.stderr
    assert upstream.requests == []
