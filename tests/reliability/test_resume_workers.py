"""Resumable answers across processes on one SQLite file: a turn running in one process
is re-attached, and stopped, through another. Two setups: `chatsvc serve --workers 2`,
and two `chatsvc serve` processes (one port each) on the same data directory.

Which worker takes a connection is the kernel's choice: the tests find the worker
holding each connection (Linux /proc) and open connections until one lands on the
other worker; a keep-alive connection stays with its worker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply, ServiceProcess
from tests.chatsvc.chat.test_chat_live import wait_for

WORDS = [f"w{i} " for i in range(80)]


def serving_pid(service, response: httpx.Response) -> int:
    """The worker process holding `response`'s connection."""
    port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    server_port = int(service.url.rsplit(":", 1)[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = fields[1], fields[2]
            if int(local.rsplit(":", 1)[1], 16) == server_port and \
                    int(remote.rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    for pid in service.pids():  # the supervisor holds only the listening socket
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) in inodes:
                    return pid
            except OSError:
                continue
    raise AssertionError("no worker holds the connection")


def client_on_another_worker(service, headers: dict, than: int) -> httpx.Client:
    """A keep-alive client whose connection a worker other than `than` holds."""
    for _ in range(40):
        http = httpx.Client(base_url=service.url, headers=headers, timeout=10)
        with http.stream("GET", "/health") as probe:
            probe.read()
            if serving_pid(service, probe) != than:
                return http
        http.close()
    raise AssertionError("every connection went to one worker")


@dataclass
class Pair:
    """Where a turn starts (`url`) and how to reach another process than the one that
    holds a response's connection (`other`)."""

    url: str
    other: Callable[[httpx.Response], httpx.Client]
    logs: list[Path]
    headers: dict


@pytest.fixture(params=["workers", "processes"])
def pair(request, ollama, scripted, tmp_path) -> Pair:
    ollama.mode = "ok"
    scripted._queue.clear()
    if request.param == "workers":
        service = request.getfixturevalue("two_workers")
        headers = {"Authorization": f"Bearer {service.tokens[0]}"}
        yield Pair(service.url, lambda response: client_on_another_worker(
            service, headers, serving_pid(service, response)), [service.log_path], headers)
        return
    env = {"CHATSVC_EMBEDDINGS": "ollama", "OLLAMA_URL": ollama.url,
           "LLM_BASE_URL": scripted.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off"}
    first, second = (ServiceProcess(tmp_path / "data", env) for _ in range(2))
    headers = {"Authorization": f"Bearer {first.add_user('alice')}"}
    with first, second:

        def other(response: httpx.Response) -> httpx.Client:
            # The /proc lookup the workers setup relies on, checked where the answer is known.
            assert serving_pid(first, response) == first.process.pid
            return httpx.Client(base_url=second.url, headers=headers, timeout=10)

        yield Pair(first.url, other, [first.log_path, second.log_path], headers)


def left_turn(pair: Pair, deltas: int) -> tuple[httpx.Client, list[tuple]]:
    """A resumable turn's first events, then hang up; and a client of another process."""
    seen = []
    with httpx.Client(base_url=pair.url, headers=pair.headers, timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat",
                        json={"message": "a story", "resumable": True}) as source:
        assert source.response.status_code == 200
        other = pair.other(source.response)
        for event in source.iter_sse():
            seen.append((int(event.id), event.event, json.loads(event.data)))
            if sum(kind == "delta" for _, kind, _ in seen) == deltas:
                break
    return other, seen


def last_answer(http: httpx.Client, conversation: str) -> dict:
    return http.get(f"/api/conversations/{conversation}").json()["messages"][-1]


def no_crash(pair: Pair) -> None:
    for log in pair.logs:
        assert "Traceback" not in log.read_text()


def test_a_turn_in_one_process_is_re_attached_through_another(pair, scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.03))
    other, first = left_turn(pair, 3)
    conversation = first[0][2]["conversation_id"]
    with other, connect_sse(other, "GET", f"/api/conversations/{conversation}/stream",
                            headers={"Last-Event-ID": str(first[-1][0])}) as source:
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
    other, first = left_turn(pair, 2)
    conversation = first[0][2]["conversation_id"]
    with other:
        stopped = other.post(f"/api/conversations/{conversation}/stop")
        answer = last_answer(other, conversation)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "interrupted"
    assert answer["status"] == "interrupted"
    assert 0 < len(answer["content"]) < len("".join(WORDS))
    no_crash(pair)
