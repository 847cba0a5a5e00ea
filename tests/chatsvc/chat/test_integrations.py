"""docs/integrations.md's recipes, each sending what its front end sends (headers and
body shape, from the front end's documentation) to the real app: one service key for
many users, each user's exchanges stored, extracted and recalled in a new chat, and
never seen by another user."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from chatsvc import Settings
from chatsvc.testing import Reply
from tests.chatsvc.extraction.conftest import answer

DOC = Path(__file__).parents[3] / "docs" / "integrations.md"


def _recipe_env(heading: str) -> dict[str, str]:
    """The `CHATSVC_*=...` lines of one recipe's bash blocks in docs/integrations.md: the
    test runs the configuration the doc shows, not a copy of it."""
    section = DOC.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    return dict(re.findall(r"^(CHATSVC_\w+)=(\S+)$", "".join(blocks), re.M))


@pytest.fixture
def recipe() -> str:
    return "LibreChat"


@pytest.fixture
def settings(upstream_settings, monkeypatch, recipe) -> Settings:
    for name, value in _recipe_env(recipe).items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


@pytest.fixture
def service_key(services) -> str:
    return services.stores.users.add("frontend", kind="service")[1]


def _completion(client, headers: dict, body: dict) -> str:
    """POST /v1/chat/completions as a front end does; the streamed text."""
    with client.stream("POST", "/v1/chat/completions", headers=headers, json=body) as sent:
        assert sent.status_code == 200, sent.read()
        lines = [line[6:] for line in sent.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def _remembered(client, upstream, headers: dict, body: dict, *, said: str, fact: str) -> None:
    """The user says something, extraction stores it, and a new chat's prompt has it."""
    upstream.script(Reply(chunks=["Noted", "."]))
    assert _completion(client, headers, body) == "Noted."
    upstream.script(answer([("core", fact, "m1", said)]))
    extracted = client.post("/api/facts/extract", headers=headers)
    assert extracted.json()["new_facts"] == 1, extracted.text
    upstream.requests.clear()


def _prompt(upstream) -> str:
    return json.dumps(upstream.requests[-1].body["messages"], ensure_ascii=False)


@pytest.mark.parametrize("recipe", ["Open WebUI"])
def test_open_webui_forwarded_user_headers(client, upstream, service_key, settings, recipe):
    assert settings.user_header == "X-OpenWebUI-User-Id"

    def open_webui(user_id: str, name: str, chat_id: str) -> dict:
        # What ENABLE_FORWARD_USER_INFO_HEADERS adds (the name URL-encoded).
        return {"Authorization": f"Bearer {service_key}", "X-OpenWebUI-User-Id": user_id,
                "X-OpenWebUI-User-Name": quote(name, safe=" "),
                "X-OpenWebUI-User-Email": f"{user_id}@example.org",
                "X-OpenWebUI-User-Role": "user", "X-OpenWebUI-Chat-Id": chat_id}

    said = "I just moved to Lyon with my dog Biscuit."
    body = {"model": settings.llm_model, "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": said}]}
    jurgen = open_webui("6f1c0e4a-1b7d", "Jürgen Müller", "chat-1")
    _remembered(client, upstream, jurgen, body, said=said, fact="Lives in Lyon with a dog, Biscuit")
    assert client.get("/api/me", headers=jurgen).json()["name"] == "Jürgen Müller"

    upstream.script(Reply(chunks=["In Lyon."]))
    question = {**body, "messages": [{"role": "user", "content": "Where do I live?"}]}
    assert _completion(client, open_webui("6f1c0e4a-1b7d", "Jürgen Müller", "chat-2"),
                       question) == "In Lyon."
    assert "Lives in Lyon with a dog, Biscuit" in _prompt(upstream)
    chats = client.get("/api/conversations", headers=jurgen).json()["conversations"]
    assert len(chats) == 2  # one per Open WebUI chat id

    upstream.script(Reply(chunks=["I don't know."]))
    _completion(client, open_webui("2b9d", "Ana", "chat-1"), question)  # same chat id
    assert "Biscuit" not in _prompt(upstream)
    assert client.get("/api/conversations", headers=open_webui("2b9d", "Ana", "x")).json()[
        "conversations"][0]["title"] == "Where do I live?"


def test_librechat_custom_endpoint_headers_and_user_field(client, upstream, service_key,
                                                          settings):
    def librechat(user_id: str, name: str) -> dict:
        # librechat.yaml's headers with {{LIBRECHAT_USER_ID}} / {{LIBRECHAT_USER_NAME}}.
        return {"Authorization": f"Bearer {service_key}", "X-Chatsvc-User": user_id,
                "X-Chatsvc-User-Name": name}

    said = "I work as a nurse at the night shift."
    body = {"model": settings.llm_model, "stream": True, "user": "65f0c2a1e4b0",
            "temperature": 1, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0,
            "messages": [{"role": "system", "content": "You are a helpful assistant."},
                         {"role": "user", "content": said}]}
    ana = librechat("65f0c2a1e4b0", "Ana")
    _remembered(client, upstream, ana, body, said=said, fact="Works as a night-shift nurse")

    # LibreChat sends the whole conversation again: only what is new is stored.
    upstream.script(Reply(chunks=["Good night."]))
    follow_up = {**body, "messages": [*body["messages"],
                                      {"role": "assistant", "content": "Noted."},
                                      {"role": "user", "content": "Any sleep tips?"}]}
    _completion(client, ana, follow_up)
    [chat] = client.get("/api/conversations", headers=ana).json()["conversations"]
    messages = client.get(f"/api/conversations/{chat['id']}", headers=ana).json()["messages"]
    assert [m["content"] for m in messages] == [said, "Noted.", "Any sleep tips?", "Good night."]

    upstream.script(Reply(chunks=["Hi."]))
    _completion(client, librechat("65f0c2a1e4b1", "Ben"),
                {**body, "messages": [{"role": "user", "content": "What is my job?"}]})
    assert "nurse" not in _prompt(upstream)


def test_lobechat_with_a_token_per_user(client, upstream, alice, settings):
    # LobeChat's OpenAI provider: the user's own token as API key, no user header.
    said = "My favourite language is Rust."
    body = {"model": settings.llm_model, "stream": True, "temperature": 1, "top_p": 1,
            "frequency_penalty": 0, "presence_penalty": 0,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": said}]}
    _remembered(client, upstream, alice[1], body, said=said, fact="Favourite language is Rust")
    upstream.script(Reply(chunks=["Rust."]))
    _completion(client, alice[1], {**body, "messages": [
        {"role": "user", "content": "Which language should I use?"}]})
    assert "Favourite language is Rust" in _prompt(upstream)


def test_a_web_app_with_the_official_openai_client(live, upstream, service_key, settings):
    import openai

    said = "I just moved to Lyon."
    chatsvc = openai.OpenAI(base_url=f"{live}/v1", api_key=service_key, max_retries=0)
    upstream.script(Reply(chunks=["Welcome", "!"]))
    stream = chatsvc.chat.completions.create(  # docs/integrations.md's snippet
        model=settings.llm_model, stream=True,
        messages=[{"role": "user", "content": said}],
        extra_headers={"X-Chatsvc-User": "user-4711", "X-Chatsvc-Conversation": "chat-1"},
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Welcome!"
    refused = chatsvc.with_options(max_retries=0).chat.completions.create
    with pytest.raises(openai.BadRequestError, match="X-Chatsvc-User"):
        refused(model=settings.llm_model, messages=[{"role": "user", "content": "Hi"}])
    chatsvc.close()
