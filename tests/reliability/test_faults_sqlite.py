"""A second writer holding SQLite's write lock (BEGIN IMMEDIATE) while chats run.

Under a real `chatsvc serve`: a lock shorter than the busy timeout only delays
the turn; nothing is lost, nothing crashes. The query's embedding (an HTTP service
here) does not wait for the question's write.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager

from chatsvc.testing import Reply
from tests.reliability.conftest import chat_turn, stored

HOLD = 1.0
SLACK = 3.0


@contextmanager
def write_locked(path, seconds: float):
    """Another process's writer: BEGIN IMMEDIATE held for `seconds` (in a thread)."""
    locked = threading.Event()

    def hold():
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        locked.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(5)
    try:
        yield
    finally:
        thread.join()


def test_a_locked_database_delays_the_turn_and_loses_nothing(fault, scripted):
    scripted.script(Reply(chunks=["after ", "the lock"]))
    with write_locked(fault.settings.database_path, HOLD):
        turn = chat_turn(fault, "alice", "written while locked")
    assert turn.kinds == ["meta", "delta", "delta", "done"]
    assert HOLD * 0.8 <= turn.seconds < HOLD + SLACK
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "written while locked", "complete"),
        ("assistant", "after the lock", "complete")]


def test_the_query_embedding_starts_while_the_question_waits_for_the_lock(
        fault, ollama, scripted):
    scripted.script(Reply(chunks=["grounded"]))
    message = "asked while another writer holds the lock"
    result = {}

    def run_turn():
        result["turn"] = chat_turn(fault, "alice", message)

    with write_locked(fault.settings.database_path, HOLD * 3):
        locked_until = time.monotonic() + HOLD * 3
        chatting = threading.Thread(target=run_turn)
        chatting.start()
        while not ollama.asked(message) and time.monotonic() < locked_until + SLACK:
            time.sleep(0.01)
        embedded_at = time.monotonic()
    chatting.join(SLACK + 5)
    assert ollama.asked(message)
    assert embedded_at < locked_until  # before the question could be stored
    turn = result["turn"]
    assert (turn.meta["mode"], turn.kinds[-1]) == ("rag", "done")
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", message, "complete"), ("assistant", "grounded", "complete")]


def test_a_lock_taken_mid_stream_delays_saving_the_reply(fault, scripted):
    scripted.script(Reply(chunks=["a", "b", "c", "d"], chunk_delay=0.1))
    asked = len(scripted.requests)
    result = {}

    def run_turn():
        result["turn"] = chat_turn(fault, "alice", "save me later")

    chatting = threading.Thread(target=run_turn)
    chatting.start()
    while len(scripted.requests) == asked:  # question stored, the upstream answering
        time.sleep(0.01)
    with write_locked(fault.settings.database_path, HOLD):
        pass
    chatting.join(HOLD + SLACK + 5)
    turn = result["turn"]
    assert turn.kinds[-1] == "done"
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "save me later", "complete"), ("assistant", "abcd", "complete")]
