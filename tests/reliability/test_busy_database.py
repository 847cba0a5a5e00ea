"""A second writer holding the write lock longer than the busy timeout (in process).

The busy timeout is shortened to 200 ms so the lock outlasts it quickly. The
second connection comes from the same SQLite library (sqlean): two SQLite
copies in one process do not see each other's POSIX locks.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
import sqlean

import store.sqlite._db
from chatsvc import Settings
from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import read_events

BUSY_MS = 200


@pytest.fixture
def settings(isolated_env, upstream, monkeypatch):
    monkeypatch.setattr(store.sqlite._db, "BUSY_TIMEOUT_MS", BUSY_MS)
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("LLM_RETRY_BACKOFF", "0.01")
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    return Settings.from_env()


class Writer:
    """Another writer: BEGIN IMMEDIATE on its own connection until released."""

    def __init__(self, path) -> None:
        self.conn = sqlean.connect(str(path), isolation_level=None, check_same_thread=False)

    def lock(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


def crashes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


@pytest.mark.parametrize("path, body", [
    ("/api/chat", {"message": "hello", "stream": False}),
    ("/api/chat", {"message": "hello"}),
    ("/api/memory", {"content": "likes figs", "type": "note", "scope": "global"}),
    ("/api/facts", {"category": "core", "fact": "Likes figs"}),
])
def test_a_write_lock_beyond_the_busy_timeout_is_503_and_writes_nothing(
    client, alice, settings, caplog, path, body
):
    writer = Writer(settings.database_path)
    writer.lock()
    try:
        started = time.monotonic()
        response = client.post(path, json=body, headers=alice[1])
        elapsed = time.monotonic() - started
    finally:
        writer.release()
    assert response.status_code == 503, response.text
    assert "database is busy" in response.json()["detail"]
    assert response.headers["retry-after"] == "1"
    assert elapsed < BUSY_MS / 1000 + 3.0
    assert client.get("/api/conversations", headers=alice[1]).json() == {
        "conversations": [], "total": 0}
    assert client.get("/api/memory", headers=alice[1]).json() == {"memories": []}
    assert client.get("/api/facts", headers=alice[1]).json()["total"] == 0
    assert crashes(caplog) == []


def test_a_lock_over_the_reply_save_is_waited_out(client, alice, upstream, settings, caplog):
    upstream.script(Reply(chunks=["all ", "of ", "it"], chunk_delay=0.1))
    writer = Writer(settings.database_path)

    def lock_while_answering():
        while not upstream.requests:  # the question is stored, the upstream answering
            time.sleep(0.005)
        writer.lock()
        time.sleep(1.0)  # five busy timeouts
        writer.release()

    locker = threading.Thread(target=lock_while_answering)
    locker.start()
    events = read_events(client, alice[1], {"message": "keep my answer"})
    locker.join()
    assert [kind for kind, _ in events] == ["meta", "delta", "delta", "delta", "done"]
    conversation = events[0][1]["conversation_id"]
    messages = client.get(f"/api/conversations/{conversation}", headers=alice[1]).json()
    assert [(m["role"], m["content"], m["status"]) for m in messages["messages"]] == [
        ("user", "keep my answer", "complete"), ("assistant", "all of it", "complete")]
    assert crashes(caplog) == []


@pytest.mark.parametrize(("code", "busy"), [(5, True), (517, True), (6, True), (15, True),
                                             (1, False), (11, False), (None, False)])
def test_lock_result_codes_count_as_busy_wal_locking_protocol_too(code, busy):
    # SQLITE_PROTOCOL cannot be provoked on demand: WAL mode returns it when it fails to
    # get its locks after many tries, as under a large import's checkpoints.
    error = sqlean.OperationalError("locking protocol")
    if code is not None:  # None: the driver's own errors carry no code
        error.sqlite_errorcode = code  # 517: SQLITE_BUSY_SNAPSHOT, an extended code
    assert store.sqlite._db._transient(error) is busy
