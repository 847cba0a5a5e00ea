"""Resumable answers across processes on one SQLite file: a turn running in one process
is re-attached, and stopped, through another.

The processes are two `chatsvc serve` (one port each) on one data directory: what
`serve --workers 2` runs, with the process chosen by the port. Under `--workers 2`
the kernel chose: it gave one worker all of 20 connections in a row (measured with
the /proc socket table on this machine), so a test could not reach the other one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply, ServiceProcess
from tests.chatsvc.chat.test_chat_live import wait_for

WORDS = [f"w{i} " for i in range(80)]


@dataclass
class Pair:
    url: str  # where a turn starts
    other: str  # another process on the same database
    logs: list[Path]
    headers: dict


@pytest.fixture
def pair(ollama, scripted, tmp_path) -> Pair:
    ollama.mode = "ok"
    scripted._queue.clear()
    env = {"CHATSVC_EMBEDDINGS": "ollama", "OLLAMA_URL": ollama.url,
           "LLM_BASE_URL": scripted.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off"}
    first, second = (ServiceProcess(tmp_path / "data", env) for _ in range(2))
    headers = {"Authorization": f"Bearer {first.add_user('alice')}"}
    with first, second:
        yield Pair(first.url, second.url, [first.log_path, second.log_path], headers)


def left_turn(pair: Pair, deltas: int) -> list[tuple]:
    """A resumable turn's first events, then hang up."""
    seen = []
    with httpx.Client(base_url=pair.url, headers=pair.headers, timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat",
                        json={"message": "a story", "resumable": True}) as source:
        assert source.response.status_code == 200
        for event in source.iter_sse():
            seen.append((int(event.id), event.event, json.loads(event.data)))
            if sum(kind == "delta" for _, kind, _ in seen) == deltas:
                break
    return seen


def other_process(pair: Pair) -> httpx.Client:
    return httpx.Client(base_url=pair.other, headers=pair.headers, timeout=10)


def last_answer(http: httpx.Client, conversation: str) -> dict:
    return http.get(f"/api/conversations/{conversation}").json()["messages"][-1]


def no_crash(pair: Pair) -> None:
    for log in pair.logs:
        assert "Traceback" not in log.read_text()


def test_a_turn_in_one_process_is_re_attached_through_another(pair, scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.03))
    first = left_turn(pair, 3)
    conversation = first[0][2]["conversation_id"]
    path = f"/api/conversations/{conversation}/stream"
    with other_process(pair) as other, connect_sse(
            other, "GET", path, headers={"Last-Event-ID": str(first[-1][0])}) as source:
        assert source.response.status_code == 200
        rest = [(int(e.id), e.event, json.loads(e.data)) for e in source.iter_sse()]
        assert rest[-1][1] == "done"
        wait_for(lambda: last_answer(other, conversation)["status"] != "pending", 10)
        answer = last_answer(other, conversation)
    ids = [ident for ident, _, _ in first + rest]
    assert ids == list(range(1, len(ids) + 1))
    assert answer["status"] == "complete" and answer["content"] == "".join(WORDS)
    said = "".join(d["content"] for _, kind, d in first + rest if kind == "delta")
    assert said == answer["content"]
    no_crash(pair)


def test_stop_through_another_process_keeps_the_partial_answer(pair, scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.05))
    first = left_turn(pair, 2)
    conversation = first[0][2]["conversation_id"]
    with other_process(pair) as other:
        stopped = other.post(f"/api/conversations/{conversation}/stop")
        answer = last_answer(other, conversation)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "interrupted"
    assert answer["status"] == "interrupted"
    assert 0 < len(answer["content"]) < len("".join(WORDS))
    no_crash(pair)
