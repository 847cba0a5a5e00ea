"""Server-side tools in /api/chat: the loop (call -> result -> answer) for each tool,
its limits and failures, the caller's identity, and the stored exchange replayed
byte for byte on the next turn."""

from __future__ import annotations

import json

import pytest

from chatsvc.testing import Reply, ToolCall
from chatsvc.testing._upstream import prompt_tokens
from tests.chatsvc.chat.conftest import chat, read_events, seed_user_data
from tests.chatsvc.knowledge_jobs import add_document
from tests.chatsvc.recall.conftest import wait_until_indexed


def _call(name: str, **arguments) -> ToolCall:
    return ToolCall(name, json.dumps(arguments), id=f"call_{name}")


def _tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def _entry_id(client, headers, title: str) -> str:
    entries = client.get("/api/knowledge", headers=headers).json()["entries"]
    return next(e["id"] for e in entries if e["title"] == title)


def test_each_tool_loop_calls_gets_the_result_and_answers(client, alice, upstream):
    seed_user_data(client, alice[1], document=True)
    entry = _entry_id(client, alice[1], "Deploy notes")
    said = {"conversations": [{"title": "boats", "messages": [
        {"role": "user", "content": "I bought a red kayak last spring"}]}]}
    assert client.post("/api/conversations/import", json=said,
                       headers=alice[1]).status_code == 202
    assert wait_until_indexed(client, alice[1])["indexed"] == 1
    loops = [(_call("search_knowledge", query="how is chatsvc deployed"), "nginx"),
             (_call("read_knowledge", id=entry), "uvicorn behind nginx"),
             (_call("search_conversations", query="what boat did I buy"), "red kayak"),
             (_call("search_facts", query="where does the user live"), "Lisbon"),
             (_call("remember", content="Likes green tea", type="preference"), "learned")]
    for call, expected in loops:
        upstream.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Done", "."]))
        events = chat(client, alice[1], "Use your tools")
        names = [name for name, _ in events]
        assert names == ["meta", "tool", "tool", "delta", "delta", "done"], names
        assert [data["status"] for name, data in events if name == "tool"] == ["running", "done"]
        assert events[1][1] == {"name": call.name, "arguments": call.arguments,
                                "status": "running"}
        assert events[-1][1]["finish_reason"] == "stop"
        first, second = (r.body for r in upstream.requests[-2:])
        assert first["tool_choice"] == "auto" and first["tools"] == second["tools"]
        assert {t["function"]["name"] for t in first["tools"]} == {
            "search_knowledge", "read_knowledge", "search_conversations", "search_facts",
            "remember"}
        assert second["messages"][:len(first["messages"])] == first["messages"]
        (result,) = _tool_results(second)
        assert expected in result, result
    memories = client.get("/api/memory", headers=alice[1]).json()["memories"]
    assert any(m["content"] == "Likes green tea" and m["origin"] == "learned"
               for m in memories)


def test_the_next_turn_replays_the_exchange_byte_for_byte(client, alice, upstream):
    seed_user_data(client, alice[1])
    upstream.script(Reply(chunks=["Let me look. "],
                          tool_calls=[_call("search_facts", query="home town")]),
                    Reply(chunks=["Lisbon."]), Reply(chunks=["Miso."]))
    meta = chat(client, alice[1], "Where do I live?")[0][1]
    done = chat(client, alice[1], "And my cat?", meta["conversation_id"])[-1][1]
    _, answered, next_turn = (r.body["messages"] for r in upstream.requests)
    assert next_turn[:len(answered)] == answered
    assert next_turn[len(answered)] == {"role": "assistant", "content": "Lisbon."}
    assert answered[-2]["tool_calls"][0]["function"]["arguments"] == '{"query": "home town"}'
    assert answered[-2]["content"] == "Let me look. "
    # The cache covers the whole previous request (its last token may merge on).
    assert done["usage"]["cached_tokens"] >= len(prompt_tokens(answered)) - 1
    stored = client.get(f"/api/conversations/{meta['conversation_id']}",
                        headers=alice[1]).json()["messages"]
    assert stored[1]["content"] == "Let me look. Lisbon."


@pytest.fixture
def settings(upstream_settings):
    return upstream_settings.with_overrides(tool_rounds=2)


def test_the_round_limit_ends_with_an_answer_without_tools(client, alice, upstream):
    again = _call("search_facts", query="again")
    upstream.script(Reply(chunks=[], tool_calls=[again]), Reply(chunks=[], tool_calls=[again]),
                    Reply(chunks=["Enough."], tool_calls=[again]))
    events = chat(client, alice[1], "Loop forever")
    assert [d["status"] for n, d in events if n == "tool"] == ["running", "done"] * 2
    assert [r.body["tool_choice"] for r in upstream.requests] == ["auto", "auto", "none"]
    assert events[-1][0] == "done" and events[-2] == ("delta", {"content": "Enough."})
    assert len(_tool_results(upstream.requests[-1].body)) == 2


def test_tool_errors_reach_the_model_and_the_turn_completes(client, alice, upstream,
                                                            services, monkeypatch):
    async def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services.knowledge, "search", broken)
    calls = [_call("read_knowledge", id="nope"), _call("search_knowledge", query="x"),
             ToolCall("search_facts", '{"query": ', id="call_bad"),
             _call("search_facts", limit=5), _call("delete_everything")]
    upstream.script(Reply(chunks=[], tool_calls=calls), Reply(chunks=["Sorry."]))
    events = chat(client, alice[1], "Try everything")
    assert [d["status"] for n, d in events if n == "tool" and d["status"] != "running"] == [
        "error"] * 5
    assert events[-1][0] == "done"
    results = _tool_results(upstream.requests[-1].body)
    assert results[0] == "error: no knowledge entry 'nope'"
    assert results[1] == "error: search_knowledge failed unexpectedly; answer without it"
    assert results[2].startswith("error: the arguments are not valid JSON")
    assert results[3].startswith("error: invalid arguments: query: Field required")
    assert results[4].startswith("error: there is no tool 'delete_everything'")


def test_json_mode_returns_the_tool_calls(client, alice, upstream):
    call = _call("search_facts", query="cat")
    upstream.script(Reply(chunks=[], tool_calls=[call]), Reply(chunks=["Miso."]))
    body = client.post("/api/chat", json={"message": "cat?", "stream": False},
                       headers=alice[1]).json()
    assert body["content"] == "Miso."
    assert body["tool_calls"] == [{"name": "search_facts", "arguments": call.arguments,
                                   "status": "done"}]


def test_tools_act_as_the_caller_only(client, alice, bob, upstream):
    assert client.post("/api/facts", json={"category": "core", "fact": "Lives in Oslo"},
                       headers=bob[1]).status_code == 201
    doc = {"title": "Bob's diary", "content": "Bob's secret plans for Oslo."}
    add_document(client, bob[1], doc)
    secret = _entry_id(client, bob[1], "Bob's diary")
    upstream.script(Reply(chunks=[], tool_calls=[
        _call("search_facts", query="Oslo"), _call("read_knowledge", id=secret),
        _call("search_knowledge", query="secret plans Oslo", mode="keyword"),
        _call("remember", content="Alice asked about Oslo")]), Reply(chunks=["Nothing."]))
    chat(client, alice[1], "What does Bob plan? Remember that I asked.")
    facts, read, search, _ = _tool_results(upstream.requests[-1].body)
    assert json.loads(facts) == {"results": []}
    assert read == f"error: no knowledge entry {secret!r}"
    assert json.loads(search)["results"] == []
    assert client.get("/api/memory", headers=bob[1]).json()["memories"] == []
    assert [m["content"] for m in client.get("/api/memory", headers=alice[1]).json()[
        "memories"]] == ["Alice asked about Oslo"]


def test_tools_off_and_for_bundled_models(upstream_settings):
    from chatsvc import Settings, SettingsError

    assert upstream_settings.tools_enabled
    assert not upstream_settings.with_overrides(tools="off").tools_enabled
    assert not upstream_settings.with_overrides(llm_model="gemma-3-270m").tools_enabled
    assert Settings.from_env({"CHATSVC_TOOL_ROUNDS": "2"}).tool_rounds == 2
    with pytest.raises(SettingsError, match="CHATSVC_TOOLS"):
        Settings.from_env({"CHATSVC_TOOLS": "sometimes"})


def test_no_tools_are_offered_when_off(client, alice, upstream, services):
    services.settings = services.settings.with_overrides(tools="off")
    events = read_events(client, alice[1], {"message": "hi"})
    assert events[-1][0] == "done"
    assert "tools" not in upstream.requests[-1].body


def test_a_client_gone_mid_loop_cancels_the_upstream_and_stores_interrupted(
        live, alice, upstream, services):
    import httpx

    from tests.chatsvc.chat.test_chat_live import wait_for

    upstream.script(Reply(chunks=[], tool_calls=[_call("search_facts", query="x")]),
                    Reply(chunks=[f"word{i} " for i in range(200)], chunk_delay=0.02))
    meta, event = None, None
    with httpx.Client(base_url=live, headers=alice[1], timeout=10) as http, http.stream(
        "POST", "/api/chat", json={"message": "search, then talk long"}
    ) as response:
        for line in response.iter_lines():
            event = line[7:] if line.startswith("event: ") else event
            if line.startswith("data: ") and event == "meta":
                meta = json.loads(line[6:])
            if line.startswith("data: ") and event == "delta":
                break  # gone after the tool ran, while the second request streams
    wait_for(lambda: upstream.closed_early == 1, timeout=1.0)

    def answer():
        found = services.stores.chats.messages(alice[0].id, meta["conversation_id"])[-1]
        return found if found.status != "pending" else None

    wait_for(answer, timeout=2.0)
    assert answer().status == "interrupted" and answer().content.startswith("word0")
    assert answer().tool_exchange is None  # only a whole exchange is replayed


def test_each_result_is_capped_in_tokens(client, alice, upstream, settings):
    from context.tokens import get_tokenizer

    words = " ".join(["word"] * 2400)  # one token each: past the cap, little to embed
    doc = {"title": "Long", "content": words}
    add_document(client, alice[1], doc)
    upstream.script(Reply(chunks=[], tool_calls=[
        _call("read_knowledge", id=_entry_id(client, alice[1], "Long"))]), Reply())
    chat(client, alice[1], "Read it")
    (result,) = _tool_results(upstream.requests[-1].body)
    body, note = result.rsplit("\n", 1)
    assert note.startswith("[cut at 2000 tokens")
    assert get_tokenizer(settings.tokenizer).count(body) <= 2000
