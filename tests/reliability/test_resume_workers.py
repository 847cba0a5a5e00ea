"""Resumable answers under `chatsvc serve --workers 2` on one SQLite file: a turn running
in one worker is re-attached, and stopped, through the other.

Which worker takes a connection is the kernel's choice: the tests find the worker
holding each connection (Linux /proc) and open connections until one lands on the
other worker; a keep-alive connection stays with its worker.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply
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
    for pid in service.pids()[1:]:
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


def left_turn(service, headers: dict, deltas: int) -> tuple[int, list[tuple]]:
    """A resumable turn: the worker running it and its first events, then hang up."""
    seen = []
    with httpx.Client(base_url=service.url, headers=headers, timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat",
                        json={"message": "a story", "resumable": True}) as source:
        assert source.response.status_code == 200
        worker = serving_pid(service, source.response)
        for event in source.iter_sse():
            seen.append((int(event.id), event.event, json.loads(event.data)))
            if sum(kind == "delta" for _, kind, _ in seen) == deltas:
                break
    return worker, seen


def last_answer(service, headers: dict, conversation: str) -> dict:
    return httpx.get(f"{service.url}/api/conversations/{conversation}", headers=headers,
                     timeout=10).json()["messages"][-1]


@pytest.fixture
def headers(two_workers, ollama, scripted):
    ollama.mode = "ok"
    scripted._queue.clear()
    return {"Authorization": f"Bearer {two_workers.tokens[0]}"}


def test_a_turn_in_one_worker_is_re_attached_through_the_other(two_workers, headers, scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.03))
    worker, first = left_turn(two_workers, headers, 3)
    conversation = first[0][2]["conversation_id"]
    with client_on_another_worker(two_workers, headers, worker) as http, connect_sse(
            http, "GET", f"/api/conversations/{conversation}/stream",
            headers={"Last-Event-ID": str(first[-1][0])}) as source:
        assert source.response.status_code == 200
        assert serving_pid(two_workers, source.response) != worker
        rest = [(int(e.id), e.event, json.loads(e.data)) for e in source.iter_sse()]
    assert rest[-1][1] == "done"
    ids = [ident for ident, _, _ in first + rest]
    assert ids == list(range(1, len(ids) + 1))
    wait_for(lambda: last_answer(two_workers, headers, conversation)["status"] != "pending", 10)
    answer = last_answer(two_workers, headers, conversation)
    assert answer["status"] == "complete" and answer["content"] == "".join(WORDS)
    said = "".join(d["content"] for _, kind, d in first + rest if kind == "delta")
    assert said == answer["content"]
    assert "Traceback" not in two_workers.log_path.read_text()


def test_stop_through_the_other_worker_keeps_the_partial_answer(two_workers, headers,
                                                                 scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.05))
    worker, first = left_turn(two_workers, headers, 2)
    conversation = first[0][2]["conversation_id"]
    with client_on_another_worker(two_workers, headers, worker) as http:
        stopped = http.post(f"/api/conversations/{conversation}/stop")
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "interrupted"
    answer = last_answer(two_workers, headers, conversation)
    assert answer["status"] == "interrupted"
    assert 0 < len(answer["content"]) < len("".join(WORDS))
    assert "Traceback" not in two_workers.log_path.read_text()
