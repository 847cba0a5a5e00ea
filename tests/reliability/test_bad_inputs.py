"""Hostile and malformed input against the real `chatsvc serve` child.

Bad input: a 4xx whose detail names the field, and the database file is
unchanged. Text that merely looks dangerous (FTS syntax, SQL) is data: stored
and searched literally. The `fault` fixture fails on any traceback in the log.
"""

from __future__ import annotations

import sqlite3

import httpx
import pytest

from tests.reliability.conftest import auth

JSON = {"content-type": "application/json"}
MEMORY = {"type": "note", "scope": "global"}

# (method, path, request options, expected status, field named in the detail)
BAD = [
    ("POST", "/api/chat", {"json": {"message": ""}}, 400, "message"),
    ("POST", "/api/chat", {"json": {"message": " \n\t\u3000 "}}, 400, "message"),
    ("POST", "/api/chat", {"json": {"message": "x" * 1_048_576}}, 413, None),
    ("POST", "/api/chat", {"content": b'{"message": "\xff\xfe"}', "headers": JSON}, 400, "body"),
    ("POST", "/v1/chat/completions", {"content": b'{"model": "\xc3\x28"}', "headers": JSON},
     400, "body"),
    ("POST", "/api/chat", {"json": {"message": "nul\u0000byte"}}, 400, "message"),
    ("POST", "/api/chat", {"json": {"message": "escape \u001b[31m red"}}, 400, "message"),
    ("POST", "/api/facts", {"json": {"category": "core", "fact": "bell\u0007"}}, 400, "fact"),
    ("POST", "/api/memory", {"json": {"content": "a\u0000", **MEMORY}}, 400, "content"),
    ("POST", "/api/knowledge/documents", {"json": {"title": "t\u0000", "content": "c"}},
     400, "title"),
    ("GET", "/api/facts", {"params": {"limit": "ten"}}, 400, "limit"),
    ("GET", "/api/facts", {"params": {"limit": "-1"}}, 400, "limit"),
    ("GET", "/api/facts", {"params": {"limit": "0"}}, 400, "limit"),
    ("GET", "/api/facts", {"params": {"limit": str(10**20)}}, 400, "limit"),
    ("GET", "/api/facts/search", {"params": {"q": "x", "limit": "-3"}}, 400, "limit"),
    ("GET", "/api/facts/search", {"params": {"q": "x", "limit": "51"}}, 400, "limit"),
    ("GET", "/api/facts", {"params": {"offset": "-1"}}, 400, "offset"),
    ("GET", "/api/facts", {"params": {"offset": str(10**20)}}, 400, "offset"),
    ("GET", "/api/facts/search", {"params": {"q": "x", "limit": "many"}}, 400, "limit"),
    ("GET", "/api/facts/search", {"params": {"q": "x", "max_distance": "-1"}}, 400,
     "max_distance"),
    ("GET", "/api/knowledge", {"params": {"limit": "-5"}}, 400, "limit"),
    ("GET", "/api/knowledge", {"params": {"limit": str(10**20)}}, 400, "limit"),
    ("GET", "/api/posts", {"params": {"limit": "0"}}, 400, "limit"),
    ("POST", "/api/knowledge/search", {"json": {"query": "x", "limit": 10**20}}, 400, "limit"),
    ("GET", "/api/facts", {"params": {"category": "gossip"}}, 400, "category"),
    ("POST", "/api/facts", {"json": {"category": "gossip", "fact": "x"}}, 400, "category"),
    ("POST", "/api/memory", {"json": {"content": "x", "type": "rumour", "scope": "global"}},
     400, "type"),
    ("POST", "/api/memory", {"json": {"content": "x", "type": "note", "scope": "team"}},
     400, "scope"),
    ("POST", "/api/knowledge/search", {"json": {"query": "x", "mode": "psychic"}}, 400, "mode"),
    ("POST", "/api/knowledge/documents",
     {"json": {"title": "t", "content": "c", "source_type": "../etc"}}, 400, "source_type"),
    ("POST", "/api/chat", {"json": {"message": 5}}, 400, "message"),
    ("POST", "/api/chat", {"json": {"message": ["a"]}}, 400, "message"),
    ("POST", "/api/chat", {"json": {"message": "hi", "stream": "yes"}}, 400, "stream"),
    ("POST", "/api/chat", {"json": {"message": "hi", "conversation_id": 7}}, 400,
     "conversation_id"),
    ("POST", "/api/chat", {"json": ["message"]}, 400, "data"),
    ("POST", "/api/facts", {"json": {"category": "core", "fact": None}}, 400, "fact"),
    ("PATCH", "/api/memory/any", {"json": {"content": 3}}, 400, "content"),
    ("POST", "/api/knowledge/documents", {"json": {"title": "t", "content": "c",
                                                   "metadata": "x"}}, 400, "metadata"),
    ("POST", "/v1/chat/completions", {"json": {"model": 5, "messages": []}}, 400, "model"),
    ("POST", "/api/chat", {"content": b'{"message": ', "headers": JSON}, 400, "body"),
    ("POST", "/api/memory", {"content": b"\xff", "headers": JSON}, 400, "body"),
    ("POST", "/api/facts", {"content": b'{"fact": 1e999}', "headers": JSON}, 400, "body"),
    # Litestar would take these for bools (found by fuzzing)
    ("POST", "/api/chat", {"json": {"message": "hi", "stream": 0}}, 400, "stream"),
    ("POST", "/api/chat", {"json": {"message": "hi", "resumable": "true"}}, 400, "resumable"),
    ("POST", "/api/knowledge/documents", {"json": {"title": "t", "content": "c",
                                                   "pinned": 1}}, 400, "pinned"),
    ("PATCH", "/api/knowledge/any", {"json": {"pinned": "false"}}, 400, "pinned"),
    # times that leave years 1-9999 once moved to UTC, or carry a NUL
    ("GET", "/api/usage", {"params": {"from": "0001-01-01T00:00:00+01:00"}}, 400, "from"),
    ("GET", "/api/usage", {"params": {"to": "9999-12-31T23:59:59-05:00"}}, 400, "to"),
    ("GET", "/api/conversations/search",
     {"params": {"q": "x", "after": "0001-01-01T00:00:00+01:00"}}, 400, "after"),
    ("GET", "/api/conversations/search",
     {"params": {"q": "x", "before": "2026-01-01T00:00:00Z\u0000"}}, 400, "before"),
    ("GET", "/api/conversations/abc/stream", {"params": {"last_event_id": "\u0661"}}, 400,
     "Last-Event-ID"),
    ("GET", "/api/facts/search", {"params": {"q": "a\u0000b"}}, 400, "q"),
    # an int or bool written otherwise: Litestar would convert it
    ("GET", "/api/facts", {"params": {"limit": "1.0"}}, 400, "limit"),
    ("GET", "/api/facts", {"params": {"limit": "1e1"}}, 400, "limit"),
    ("GET", "/api/conversations", {"params": {"offset": "+5"}}, 400, "offset"),
    ("GET", "/api/knowledge", {"params": {"pinned": "1"}}, 400, "pinned"),
    ("GET", "/api/knowledge", {"params": {"pinned": "True"}}, 400, "pinned"),
    # a parameter sent twice: Litestar would use the last value silently
    ("GET", "/api/facts", {"params": [("limit", "500"), ("limit", "1")]}, 400, "limit"),
    ("GET", "/api/conversations/search",
     {"params": [("q", "x"), ("mode", "psychic"), ("mode", "keyword")]}, 400, "mode"),
    ("GET", "/v1/models", {"params": [("x", "1"), ("x", "2")]}, 400, "x"),
]


def digest(path) -> dict[str, list[tuple]]:
    """Every row of every plain table, read by a second connection."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        return {n: sorted(map(tuple, conn.execute(f'SELECT * FROM "{n}"')), key=repr)
                for n in names}
    finally:
        conn.close()


def detail(response: httpx.Response) -> str:
    body = response.json()
    return body["error"]["message"] if "error" in body else body["detail"]


@pytest.mark.parametrize("method, path, options, status, field", BAD,
                         ids=[f"{m} {p} {f}" for m, p, _, _, f in BAD])
def test_bad_input_is_a_4xx_naming_the_field_and_changes_nothing(
    fault, method, path, options, status, field
):
    options = dict(options)
    headers = {**auth(fault, "alice"), **options.pop("headers", {})}
    before = digest(fault.settings.database_path)
    response = httpx.request(method, fault.url + path, headers=headers, timeout=30, **options)
    assert response.status_code == status, response.text
    if field:
        assert field in detail(response), response.text
    assert digest(fault.settings.database_path) == before


LOOKS_DANGEROUS = [
    'AND OR NOT "unbalanced * NEAR( title:x ^ -',
    "'); DROP TABLE facts; --",
    "1' OR '1'='1",
    "%_\\ LIKE wildcards",
]


@pytest.mark.parametrize("text", LOOKS_DANGEROUS)
def test_fts_and_sql_syntax_is_plain_data(fault, text):
    headers = auth(fault, "bob")
    url = fault.url
    fact = httpx.post(f"{url}/api/facts", json={"category": "technical", "fact": text},
                      headers=headers)
    assert fact.status_code == 201 and fact.json()["fact"] == text
    assert httpx.get(f"{url}/api/facts/{fact.json()['id']}", headers=headers).json()[
        "fact"] == text
    doc = httpx.post(f"{url}/api/knowledge/documents", headers=headers,
                     json={"title": text, "content": f"Notes: {text}"})
    assert doc.status_code == 202, doc.text
    for mode in ("keyword", "hybrid", "semantic"):
        found = httpx.post(f"{url}/api/knowledge/search", headers=headers,
                           json={"query": text, "mode": mode})
        assert found.status_code == 200, (mode, found.text)
    search = httpx.get(f"{url}/api/facts/search", params={"q": text}, headers=headers)
    assert search.status_code == 200
    assert httpx.delete(f"{url}/api/facts/{fact.json()['id']}", headers=headers).status_code == 204
    assert httpx.delete(f"{url}/api/knowledge/{doc.json()['id']}",
                        headers=headers).status_code == 204


def test_the_same_source_id_twice_replaces_instead_of_duplicating(fault):
    headers = auth(fault, "bob")
    first = httpx.post(f"{fault.url}/api/knowledge/documents", headers=headers,
                       json={"title": "Doc", "content": "first", "source_id": "dup-1"}).json()
    second = httpx.post(f"{fault.url}/api/knowledge/documents", headers=headers,
                        json={"title": "Doc", "content": "second", "source_id": "dup-1"}).json()
    assert first["id"] == second["id"] and second["status"] == "replaced"
    entry = httpx.get(f"{fault.url}/api/knowledge/{first['id']}", headers=headers).json()
    assert entry["content"] == "second"
    httpx.delete(f"{fault.url}/api/knowledge/{first['id']}", headers=headers)
