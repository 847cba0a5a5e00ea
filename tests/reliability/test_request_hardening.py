"""Issue 18 against the real `chatsvc serve` child: deeply nested JSON, a fully
validated /v1 request, control characters in every stored field, conversation paging.

Each bad request is a 400 naming the field, spends no embedding or upstream call and
leaves the database unchanged; the `fault` fixture fails on any traceback in the log.
"""

from __future__ import annotations

import sqlite3

import httpx
import pytest

from store.clock import new_id
from tests.reliability.conftest import auth
from tests.reliability.test_bad_inputs import detail, digest

JSON = {"content-type": "application/json"}
DEEP = b"[" * 1000 + b"]" * 1000


def _deep(fields: bytes) -> bytes:
    return b"{" + fields + b', "x": ' + DEEP + b"}"


DEEP_BODIES = [
    ("/api/chat", _deep(b'"message": "x"')),
    ("/v1/chat/completions", _deep(b'"model": "m", "messages": []')),
    ("/api/memory", _deep(b'"content": "x", "type": "note", "scope": "global"')),
    ("/api/facts", _deep(b'"category": "core", "fact": "x"')),
    ("/api/knowledge/documents", _deep(b'"title": "t", "content": "c"')),
    ("/api/knowledge/search", _deep(b'"query": "x"')),
]


@pytest.mark.parametrize("path, body", DEEP_BODIES, ids=[p for p, _ in DEEP_BODIES])
def test_deeply_nested_json_is_a_400(fault, path, body):
    before = digest(fault.settings.database_path)
    response = httpx.post(fault.url + path, content=body,
                          headers={**auth(fault, "alice"), **JSON}, timeout=30)
    assert response.status_code == 400, response.text
    assert "body" in detail(response)
    assert digest(fault.settings.database_path) == before


USER = [{"role": "user", "content": "hi"}]


def _calls(*ids: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]}


def _result(call_id: str) -> dict:
    return {"role": "tool", "content": "r", "tool_call_id": call_id}


# (body fields over a valid request, the field the 400 names)
BAD_V1 = [
    ({"stream_options": "x"}, "stream_options"),
    ({"stream": True, "stream_options": "x"}, "stream_options"),
    ({"stream": True, "stream_options": {"include_usage": "yes"}}, "include_usage"),
    ({"stream": "yes"}, "stream"),
    ({"max_tokens": "lots"}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"max_completion_tokens": -1}, "max_completion_tokens"),
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": 3}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"presence_penalty": 9}, "presence_penalty"),
    ({"frequency_penalty": "x"}, "frequency_penalty"),
    ({"seed": 1.5}, "seed"),
    ({"stop": 5}, "stop"),
    ({"stop": ["a", 5]}, "stop"),
    ({"messages": [{"role": "system", "content": "a\u0000b"}, *USER]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": "ok"}, {"role": "assistant", "content": "\x1b"},
                   *USER]}, "messages[1]"),
    ({"messages": [{"role": 5, "content": "x"}, *USER]}, "messages[0].role"),
    ({"messages": [{"role": [], "content": "x"}, *USER]}, "messages[0].role"),
    ({"messages": [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "r", "tool_call_id": ["c1"]}]}, "messages[2].tool_call_id"),
    ({"messages": [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\u0000}"}}]},
        {"role": "tool", "content": "r", "tool_call_id": "c1"}]},
     "messages[1].tool_calls[0].function.arguments"),
    # tool results must answer the calls of the assistant message right before them
    ({"messages": [*USER, _calls("c1"), *USER, _result("c1")]}, "messages[3].tool_call_id"),
    ({"messages": [*USER, _calls("c1"), _result("c1"), _result("c1")]},
     "messages[3].tool_call_id"),
    ({"messages": [*USER, _calls("c1", "c1"), _result("c1")]}, "messages[1].tool_calls"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0]"),
    ({"messages": "hi"}, "messages"),
]


@pytest.mark.parametrize("fields, field", BAD_V1, ids=[repr(f) for f, _ in BAD_V1])
def test_a_bad_v1_request_is_a_400_before_any_work(fault, ollama, scripted, fields, field):
    body = {"model": fault.settings.llm_model, "messages": USER, **fields}
    before = digest(fault.settings.database_path)
    queries, calls = ollama.queries, len(scripted.requests)
    response = httpx.post(f"{fault.url}/v1/chat/completions", json=body,
                          headers=auth(fault, "alice"), timeout=30)
    assert response.status_code == 400, response.text
    assert field in detail(response), response.text
    assert (ollama.queries, len(scripted.requests)) == (queries, calls)
    assert digest(fault.settings.database_path) == before


@pytest.mark.parametrize("project_id", ["p\u0000", "a\u001bb", "x\u007f"])
def test_control_characters_in_project_id_are_a_400(fault, project_id):
    before = digest(fault.settings.database_path)
    response = httpx.post(f"{fault.url}/api/chat", headers=auth(fault, "alice"), timeout=30,
                          json={"message": "hi", "project_id": project_id, "stream": False})
    assert response.status_code == 400, response.text
    assert "project_id" in detail(response)
    assert digest(fault.settings.database_path) == before


def _conversations(service, headers: dict, **params) -> httpx.Response:
    return httpx.get(f"{service.url}/api/conversations", params=params, headers=headers,
                     timeout=30)


@pytest.mark.parametrize("params, field", [
    ({"limit": "0"}, "limit"), ({"limit": "201"}, "limit"), ({"limit": "ten"}, "limit"),
    ({"limit": str(10**20)}, "limit"), ({"offset": "-1"}, "offset"),
    ({"offset": "x"}, "offset"), ({"offset": str(10**20)}, "offset"),
])
def test_conversation_paging_parameters_are_checked(fault, params, field):
    response = _conversations(fault, auth(fault, "alice"), **params)
    assert response.status_code == 400, response.text
    assert field in detail(response)


def test_the_conversation_list_pages_past_100_with_a_total(fault):
    headers = {"Authorization": f"Bearer {fault.add_user('pager')}"}
    user_id = httpx.get(f"{fault.url}/api/me", headers=headers).json()["id"]
    conn = sqlite3.connect(fault.settings.database_path)
    with conn:
        conn.executemany(
            "INSERT INTO conversations (id, user_id, title, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [(new_id(), user_id, f"c{i}", f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}",
              f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}") for i in range(130)])
    conn.close()
    first = _conversations(fault, headers).json()
    assert first["total"] == 130 and len(first["conversations"]) == 100
    pages = [_conversations(fault, headers, limit=50, offset=offset).json()
             for offset in (0, 50, 100)]
    ids = [c["id"] for page in pages for c in page["conversations"]]
    assert [len(p["conversations"]) for p in pages] == [50, 50, 30]
    assert len(set(ids)) == 130 and all(p["total"] == 130 for p in pages)
    assert _conversations(fault, headers, offset=500).json() == {"conversations": [],
                                                                "total": 130}
