"""The MCP server through the official SDK's own client: streamable HTTP at /mcp on a
real loopback server, and `chatsvc mcp --user NAME` over stdio in a subprocess."""

from __future__ import annotations

import json
import os
import sys

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.chatsvc.chat.conftest import live, live_client  # noqa: F401  (the app on a loopback port)
from tests.chatsvc.recall.conftest import wait_until_indexed

TOOL_NAMES = {"search_knowledge", "read_knowledge", "search_conversations", "search_facts",
              "search_memory", "remember", "index_document"}
LONG_DOC = "\n\n".join(
    f"Section {i}. The night train from Lisbon to Madrid leaves at {i % 12 + 1} o'clock "
    "and carries a dining car with regional wines and a quiet sleeper carriage." for i in range(90)
)


def over_http(base_url: str, headers: dict) -> Client:
    client = create_mcp_http_client(headers=headers)
    return Client(streamable_http_client(f"{base_url}/mcp", http_client=client))


def payload(result) -> dict:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


def run(coroutine_fn, *args):
    return anyio.run(coroutine_fn, *args)


def test_without_a_token_mcp_answers_401(live):  # noqa: F811
    response = httpx.post(f"{live}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401


def test_an_mcp_body_past_the_body_limit_is_413(live, alice, settings):  # noqa: F811
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    headers = {**alice[1], "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    small = httpx.post(f"{live}/mcp", content=ping, headers=headers)
    assert small.status_code == 200
    padded = ping + b" " * settings.max_body_bytes  # still valid JSON: read whole, it was 200
    response = httpx.post(f"{live}/mcp", content=padded, headers=headers)
    assert response.status_code == 413
    assert response.json() == {"status_code": 413, "detail": "Request Entity Too Large"}


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_mcp_serves_posts_only(live, alice, method):  # noqa: F811
    # A GET used to open an event stream that never carried anything and stayed open.
    response = httpx.request(method, f"{live}/mcp", timeout=5,
                             headers={**alice[1], "Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["status_code"] == 405


def test_tools_over_http_act_as_the_caller(live, alice, bob, live_client):  # noqa: F811
    client = live_client
    assert client.post("/api/facts", json={"category": "core", "fact": "Lives in Lisbon"},
                       headers=alice[1]).status_code == 201
    said = {"conversations": [{"title": "boats", "messages": [
        {"role": "user", "content": "I bought a red kayak last spring",
         "created_at": "2026-03-02T10:00:00Z"}]}]}
    assert client.post("/api/conversations/import", json=said,
                       headers=alice[1]).status_code == 202
    assert wait_until_indexed(client, alice[1])["indexed"] == 1

    async def as_alice():
        async with over_http(live, alice[1]) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == TOOL_NAMES
            doc = payload(await session.call_tool(
                "index_document", {"title": "Night trains", "content": LONG_DOC}))
            assert doc["status"] == "created" and doc["chunks"] > 1
            found = payload(await session.call_tool(
                "search_knowledge", {"query": "sleeper carriage to Madrid"}))
            assert found["results"][0]["entry_id"] == doc["id"]
            first = payload(await session.call_tool("read_knowledge", {"id": doc["id"]}))
            assert first["text"] == LONG_DOC[: len(first["text"])]
            assert first["next_offset"] == len(first["text"]) < len(LONG_DOC)
            rest = payload(await session.call_tool(
                "read_knowledge", {"id": doc["id"], "offset": first["next_offset"]}))
            assert LONG_DOC[first["next_offset"]:].startswith(rest["text"])
            saved = payload(await session.call_tool(
                "remember", {"content": "Prefers window seats on trains",
                               "type": "preference"}))
            assert saved["origin"] == "learned"
            escape = await session.call_tool("remember", {"content": "\x1b[31mred"})
            assert "control characters" in error_text(escape)  # as POST /api/memory says
            memories = payload(await session.call_tool(
                "search_memory", {"query": "where do I like to sit?"}))
            assert memories["results"][0]["id"] == saved["id"]
            facts = payload(await session.call_tool("search_facts", {"query": "home city"}))
            assert facts["results"][0]["fact"] == "Lives in Lisbon"
            earlier = payload(await session.call_tool(
                "search_conversations", {"query": "what boat did I buy?"}))
            assert earlier["results"][0]["content"] == "I bought a red kayak last spring"
            later = payload(await session.call_tool(
                "search_conversations", {"query": "kayak", "after": "2026-04-01T00:00:00Z"}))
            assert later["results"] == []
            bad_date = await session.call_tool(
                "search_conversations", {"query": "kayak", "before": "last week"})
            assert "before" in error_text(bad_date)
            empty_range = await session.call_tool("search_conversations", {
                "query": "kayak", "after": "2026-05-01", "before": "2026-04-01"})
            assert "after: must be before" in error_text(empty_range)  # as the HTTP search
            bad = await session.call_tool("search_knowledge", {"query": "x", "limit": 500})
            assert "limit" in error_text(bad)
            return doc["id"], saved["id"]

    doc_id, memory_id = run(as_alice)
    listed = client.get("/api/memory", headers=alice[1]).json()
    assert memory_id in {m["id"] for m in listed["memories"]}

    async def as_bob():
        async with over_http(live, bob[1]) as session:
            missing = await session.call_tool("read_knowledge", {"id": doc_id})
            assert f"no knowledge entry {doc_id!r}" in error_text(missing)
            found = payload(await session.call_tool(
                "search_knowledge", {"query": "sleeper carriage", "mode": "keyword"}))
            assert found["results"] == []
            assert payload(await session.call_tool("search_facts", {"query": "Lisbon"})) == {
                "results": []}
            found = payload(await session.call_tool("search_conversations", {"query": "kayak"}))
            assert found["results"] == []

    run(as_bob)


@pytest.mark.slow
def test_a_service_key_acts_for_the_end_user_it_names(live, services, live_client):  # noqa: F811
    _, key = services.stores.users.add("webui", kind="service")
    ann, ben = ({"Authorization": f"Bearer {key}", "X-Chatsvc-User": who} for who in "ab")
    assert live_client.post("/api/facts", json={"category": "core", "fact": "Lives in Lisbon"},
                            headers=ann).status_code == 201

    async def search(headers) -> list[str]:
        async with over_http(live, headers) as session:
            found = payload(await session.call_tool("search_facts", {"query": "home city"}))
            return [hit["fact"] for hit in found["results"]]

    assert run(search, ann) == ["Lives in Lisbon"]
    assert run(search, ben) == []


def test_stdio_serves_the_named_user(services, alice, client, tmp_path):
    """A real subprocess, started the way an agent's MCP config starts it."""
    assert client.post("/api/memory", json={"content": "Speaks Portuguese", "type": "profile",
                                            "scope": "global"},
                       headers=alice[1]).status_code == 201
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chatsvc", "mcp", "--user", "alice"],
        env={**os.environ}, cwd=os.getcwd(),
    )

    async def call():
        async with Client(params) as session:
            return payload(await session.call_tool(
                "search_memory", {"query": "which languages do I speak?"}))

    found = run(call)
    assert found["results"][0]["content"] == "Speaks Portuguese"


def test_stdio_refuses_an_unknown_user(services, settings, capsys):
    from chatsvc.cli import main

    assert main(["mcp", "--user", "nobody"]) == 1
    assert f"no user named 'nobody' in {settings.database_path}" in capsys.readouterr().err


@pytest.mark.slow
def test_the_printed_config_starts_the_server_from_any_directory(
    services, alice, client, tmp_path, monkeypatch, capsys
):
    """What a client does with `--print-config`'s config: start exactly that command with
    exactly that env, in a working directory of its own."""
    from chatsvc.cli import main

    assert client.post("/api/memory", json={"content": "Speaks Portuguese", "type": "profile",
                                            "scope": "global"},
                       headers=alice[1]).status_code == 201
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATSVC_DATA_DIR", "data")  # relative, as the default ./data is
    assert main(["mcp", "--user", "alice", "--print-config"]) == 0
    config = json.loads(capsys.readouterr().out)["mcpServers"]["chatsvc"]
    assert config["command"] == os.path.join(os.path.dirname(sys.executable), "chatsvc")
    assert config["args"] == ["mcp", "--user", "alice"]
    assert config["env"]["CHATSVC_DATA_DIR"] == str(tmp_path / "data")
    assert config["env"]["CHATSVC_EMBEDDINGS"] == "local"  # the shell's settings go along
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(command=config["command"], args=config["args"],
                                   env=config["env"], cwd=elsewhere)

    async def call():
        async with Client(params) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            found = payload(await session.call_tool(
                "search_memory", {"query": "which languages do I speak?"}))
            return names, found

    names, found = run(call)
    assert names == TOOL_NAMES
    assert found["results"][0]["content"] == "Speaks Portuguese"
    assert list(elsewhere.iterdir()) == []  # no ./data left behind
