"""`Database.backup`: SQLite's online backup gives a consistent, usable copy while
another thread keeps writing; PostgreSQL says to use pg_dump."""

import threading
import time

import numpy as np
import pytest

from store import SqliteDatabase, StoreError
from store.backend import stores_for
from tests import _seed


def _open(path) -> SqliteDatabase:
    return SqliteDatabase(path, embed_model="test-model", embed_dim=8)


def _counts(db) -> dict[str, int]:
    return {table: db.scalar(f"SELECT count(*) FROM {table}")
            for table in ("conversations", "messages", "facts", "fact_vec")}


def test_backup_during_writes_is_one_consistent_state(tmp_path):
    live = _open(tmp_path / "live.sqlite3")
    stores = stores_for(live)
    user = stores.users.add("alice")[0]
    stop, written = threading.Event(), threading.Event()
    rng = np.random.default_rng(0)

    def write() -> None:
        # Each round commits a conversation with two messages, then a fact with its vector.
        while not stop.is_set():
            with live.transaction():
                conv = _seed.conversation(live, user.id)
                _seed.message(live, user.id, conv, "question")
                _seed.message(live, user.id, conv, "answer", role="assistant")
            stores.facts.create(user.id, category="core", fact="a fact",
                                embedding=rng.standard_normal(8).tolist())
            written.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert written.wait(10)
        live.backup(tmp_path / "copy.sqlite3")
        during = _counts(live)
        deadline = time.monotonic() + 10  # the writer goes on after the backup too
        while _counts(live)["facts"] <= during["facts"] and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        writer.join()
    assert _counts(live)["facts"] > during["facts"] > 0  # the writer went on meanwhile

    copy = _open(tmp_path / "copy.sqlite3")
    try:
        assert copy.scalar("PRAGMA integrity_check") == "ok"
        counts = _counts(copy)
        assert 0 < counts["conversations"] <= during["conversations"]
        assert counts["messages"] == 2 * counts["conversations"]
        assert counts["fact_vec"] == counts["facts"]
        assert stores_for(copy).users.get(user.id).name == "alice"
    finally:
        copy.close()
        live.close()
    assert not (tmp_path / "copy.sqlite3.partial").exists()


def test_backup_never_overwrites_a_file(tmp_path):
    db = _open(tmp_path / "live.sqlite3")
    target = tmp_path / "taken"
    target.write_text("keep me")
    with pytest.raises(StoreError, match="exists already"):
        db.backup(target)
    db.close()
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("backend", ["postgresql"])
def test_postgresql_backup_names_pg_dump(db, tmp_path):
    with pytest.raises(StoreError, match="pg_dump --format=custom"):
        db.backup(tmp_path / "dump")
    assert not (tmp_path / "dump").exists()
