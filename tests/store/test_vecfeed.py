"""The vector change feed (store/sqlite/_vecfeed.py): two Database handles on one file
stand for two processes. A write by either is applied by the other's in-memory index
from the feed (counted in rows read, never a whole reload); a rolled-back write is seen
by neither; the snapshot file beside the database makes a restart read nothing, and is
rebuilt when corrupt, stale or of another model."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from store import Bounds, ChunkIn, Knowledge, SqliteDatabase, Users
from store.backend import stores_for
from store.facts import Facts
from store.sqlite import _snapshot, _vecfeed
from store.sqlite._vecindex import Index

DIM = 16
ROWS = 40


def _open(path) -> SqliteDatabase:
    return SqliteDatabase(path, embed_model="test-16d", embed_dim=DIM)


def _vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(DIM).tolist()


@pytest.fixture
def path(tmp_path):
    return tmp_path / "f.sqlite3"


@pytest.fixture
def two(path):
    here, there = _open(path), _open(path)
    yield here, there
    there.close()
    here.close()


def _add_doc(knowledge: Knowledge, text: str, seed: int):
    saved = knowledge.save(owner_id=None, title=text, content=text, source_type="document",
                           chunks=[ChunkIn(text, "en")])
    knowledge.save_embeddings([(job, _vec(seed)) for job in saved.jobs])
    return saved


def _nearest(knowledge: Knowledge, seed: int, limit: int = 3) -> list[str]:
    return [h.text for h in knowledge.semantic(_vec(seed), viewer_id="v", limit=limit)]


def _docs(db) -> Knowledge:
    knowledge = Knowledge(db)
    for i in range(ROWS):
        _add_doc(knowledge, f"doc {i}", 1000 + i)
    return knowledge


def test_another_process_add_and_delete_read_only_the_changed_rows(two):
    here, there = two
    mine, theirs = _docs(here), Knowledge(there)
    assert _nearest(mine, 1005)[0] == "doc 5"
    index = mine._vectors.index(None)
    assert index.rows_read == ROWS  # the first search loads everything once
    new = _add_doc(theirs, "new doc", 7)
    assert _nearest(mine, 7)[0] == "new doc"
    assert index.rows_read == ROWS + 1
    theirs.delete(new.entry.id)
    theirs.delete(mine.semantic(_vec(1005), viewer_id="v", limit=1)[0].entry_id)
    assert "new doc" not in _nearest(mine, 7) and "doc 5" not in _nearest(mine, 1005)
    assert index.rows_read == ROWS + 1  # a delete reads no row
    assert index.index.size == ROWS - 1


def test_another_process_facts_are_applied_as_ten_rows(two):
    here, there = two
    ann = Users(here).add("ann")[0].id
    mine, theirs = Facts(here), Facts(there)
    for i in range(ROWS):
        mine.create(ann, category="core", fact=f"fact {i}", embedding=_vec(i))
    assert mine.search_by_vector(ann, _vec(3), limit=1)[0].fact.fact == "fact 3"
    index = mine._vectors.index(ann)
    assert index.rows_read == ROWS
    made = [theirs.create(ann, category="core", fact=f"theirs {i}", embedding=_vec(500 + i))
            for i in range(10)]
    assert mine.search_by_vector(ann, _vec(505), limit=1)[0].fact.fact == "theirs 5"
    assert index.rows_read == ROWS + 10
    theirs.delete(ann, made[5].id)
    assert mine.search_by_vector(ann, _vec(505), limit=1)[0].fact.fact != "theirs 5"
    assert index.rows_read == ROWS + 10


def test_a_rolled_back_write_is_seen_by_no_process(two):
    here, there = two
    mine, theirs = _docs(here), Knowledge(there)
    assert _nearest(mine, 1001)[0] == _nearest(theirs, 1001)[0] == "doc 1"
    with pytest.raises(RuntimeError), here.transaction():
        _add_doc(mine, "rolled back", 9)
        raise RuntimeError("abort")
    assert "rolled back" not in _nearest(mine, 9) + _nearest(theirs, 9)
    # The next committed write may take the rolled-back change's seq: both see it.
    _add_doc(theirs, "kept", 9)
    assert _nearest(mine, 9)[0] == _nearest(theirs, 9)[0] == "kept"


def test_a_search_inside_a_rolled_back_transaction_leaves_nothing_behind(two):
    here, there = two
    mine, theirs = _docs(here), Knowledge(there)
    assert _nearest(mine, 1001)[0] == "doc 1"
    with pytest.raises(RuntimeError), here.transaction():
        uncommitted = _add_doc(mine, "uncommitted", 9)
        assert _nearest(mine, 9)[0] == "uncommitted"  # its own write, as SQL would see it
        raise RuntimeError("abort")
    committed = _add_doc(theirs, "committed", 9)  # may take the rolled-back change's seq
    assert _nearest(mine, 9)[0] == "committed"
    kept = mine._vectors.index(None).index.row_of
    assert committed.jobs[0].row_id in kept and uncommitted.jobs[0].row_id not in kept


@pytest.fixture
def files(monkeypatch):
    monkeypatch.setattr(_vecfeed, "PERSIST_MIN_ROWS", 1)


def _restart(path):
    """A new process: its first search, and how many rows it read from the tables."""
    db = _open(path)
    try:
        knowledge = Knowledge(db)
        return _nearest(knowledge, 1003), knowledge._vectors.index(None).rows_read
    finally:
        db.close()


def test_a_restart_loads_the_snapshot_file_and_the_changes_after_it(path, files):
    db = _open(path)
    expected = _nearest(_docs(db), 1003)
    assert _vecfeed.snapshot_file(db.path, "chunk_vec", None).exists()
    db.close()
    assert _restart(path) == (expected, 0)
    later = _open(path)
    _add_doc(Knowledge(later), "after the snapshot", 1003)  # ties with doc 3
    later.close()
    found, read = _restart(path)
    assert (set(found[:2]), found[2], read) == ({"after the snapshot", "doc 3"}, expected[1], 1)


def _corrupt(file, db):
    file.write_bytes(b"not a snapshot")


def _saved_arrays(file) -> dict[str, np.ndarray]:
    with open(file, "rb") as fp:
        saved = _snapshot.Snapshot(fp)
        return {name: saved[name] for name in saved.names}


def _other_model(file, db):
    arrays = _saved_arrays(file)
    header = json.loads(str(arrays["header"]))
    arrays["header"] = np.array(json.dumps({**header, "model": "another"}))
    with open(file, "wb") as out:
        _snapshot.write(out, arrays)


def _truncated(file, db):
    data = file.read_bytes()
    file.write_bytes(data[:-100])


def _earlier_format(file, db):
    """What versions before the .npy records wrote: a zip of the same arrays."""
    arrays = _saved_arrays(file)
    file.unlink()
    with open(file.with_suffix(".npz"), "wb") as out:
        np.savez(out, **arrays)


def _pruned(file, db):
    with db.transaction() as conn:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, '999999')", (_vecfeed.FLOOR_KEY,))


def _restored_backup(file, db):
    """The database goes back to an earlier state (a backup) and moves on differently
    to the same seq: the file's watermark change is not the feed's any more."""
    with db.transaction() as conn:
        top = conn.execute("SELECT max(seq) FROM vec_changes").fetchone()[0]
        conn.execute("UPDATE vec_changes SET row_id = 'another' WHERE seq = ?", (top,))


def _reindexed(file, db):
    db.reset_vectors()  # `chatsvc reindex`: a new epoch
    knowledge = Knowledge(db)
    jobs = knowledge.unembedded(limit=1000)
    knowledge.save_embeddings([(job, _vec(1000 + int(job.text.split()[1]))) for job in jobs])


@pytest.mark.parametrize("spoil", [_corrupt, _truncated, _other_model, _pruned,
                                   _restored_backup, _reindexed, _earlier_format])
def test_an_unusable_snapshot_file_is_rebuilt(path, files, spoil):
    db = _open(path)
    expected = _nearest(_docs(db), 1003)
    file = _vecfeed.snapshot_file(db.path, "chunk_vec", None)
    spoil(file, db)
    db.close()
    if spoil is _pruned:  # the feed no longer reaches back to the file's watermark
        assert _restart(path) == (expected, ROWS)
        return
    assert _restart(path) == (expected, ROWS)  # read from the tables, and saved again
    assert _restart(path) == (expected, 0)
    assert list(file.parent.iterdir()) == [file]  # an earlier format's file is gone


def test_index_growth_tombstones_and_rebuild_agree_with_exact_search(monkeypatch):
    monkeypatch.setattr("store.sqlite._vecindex.MIN_REBUILD", 8)
    rng = np.random.default_rng(3)
    index, exact = Index(DIM, np.float32), {}

    def rows(ids):
        made = [(i, rng.standard_normal(DIM).astype(np.float32)) for i in ids]
        exact.update(made)
        return [(i, v.tobytes(), "", "", f"h{i}") for i, v in made]

    index.load(rows([f"r{i}" for i in range(5)]))
    before = index.view()
    for step in range(30):
        index.add(rows([f"r{5 + step}", f"r{step // 2}"]))  # one new row, one rewritten
        gone = [f"r{step}"] if step % 3 == 0 else []
        index.remove(gone)
        for row_id in gone:
            exact.pop(row_id)
        if index.stale():
            index.rebuild()
        query = rng.standard_normal(DIM)
        ids = list(exact)
        matrix = np.array([exact[i] / np.linalg.norm(exact[i]) for i in ids])
        distance = 1 - matrix @ (query / np.linalg.norm(query))
        found = index.view().search(query, k=5, rescore=None)
        assert [f[0] for f in found] == [ids[i] for i in np.argsort(distance)[:5]]
        assert [f[1] for f in found] == pytest.approx(np.sort(distance)[:5], abs=1e-5)
        assert all(f[2] == f"h{f[0]}" for f in found)
    assert index.centered > 5  # the mean was taken again as the index grew
    assert before.n == 5 and len(before.search(query, k=10, rescore=None)) <= 5


def test_a_message_deleted_with_its_conversation_leaves_the_index(path):
    db = _open(path)
    stores = stores_for(db)
    alice = stores.users.add("alice")[0]
    conv, message = stores.chats.start_turn(alice.id, "remember the lighthouse")
    stores.chats.end_turn(alice.id, conv.id, message.id)
    stores.messages.save_embeddings([(job, _vec(3))
                                     for job in stores.messages.unembedded(limit=10)])
    assert [h.message_id for h in stores.messages.semantic(_vec(3), Bounds(alice.id))] == [
        message.id]
    index = stores.messages._vectors.index(alice.id)
    stores.chats.delete(alice.id, conv.id)  # the vector goes by cascade: the trigger tells
    assert stores.messages.semantic(_vec(3), Bounds(alice.id)) == []
    assert index.index.size == 0
    db.close()


def test_searches_in_threads_while_another_thread_writes(path, monkeypatch):
    monkeypatch.setattr("store.sqlite._vecindex.MIN_REBUILD", 8)  # rebuilds happen too
    db = _open(path)
    knowledge = _docs(db)
    errors, seen = [], []

    def search():
        try:
            for i in range(40):
                hits = knowledge.semantic(_vec(1000 + i % ROWS), viewer_id="v", limit=5)
                seen.append(len(hits))
        except Exception as exc:  # any error fails the test: reported below
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for i in range(20):
        added = _add_doc(knowledge, f"more {i}", 2000 + i)
        if i % 2:
            knowledge.delete(added.entry.id)
    for thread in threads:
        thread.join()
    assert errors == [] and seen and all(count == 5 for count in seen)
    # Never a full reload: a position read before another thread caught up is not
    # taken for the feed going back.
    assert knowledge._vectors.index(None).rows_read <= ROWS + 20
    assert _nearest(knowledge, 2004, limit=1) == ["more 4"]
    assert "more 5" not in _nearest(knowledge, 2005)  # added, then deleted
    db.close()


def test_an_index_past_the_feeds_top_loads_in_full(two):
    """The database went back to an earlier state under a running process."""
    here, there = two
    mine = _docs(here)
    assert _nearest(mine, 1002)[0] == "doc 2"
    with there.transaction() as conn:
        conn.execute("DELETE FROM vec_changes WHERE seq > 5")
        conn.execute("DELETE FROM chunk_vec WHERE chunk_id IN (SELECT id FROM knowledge_chunks "
                     "WHERE content = 'doc 2')")
    assert "doc 2" not in _nearest(mine, 1002)
    assert mine._vectors.index(None).rows_read == ROWS + ROWS - 1


def test_the_feed_is_pruned_and_an_index_behind_it_loads_in_full(two, monkeypatch):
    monkeypatch.setattr(_vecfeed, "LOG_KEEP", 8)
    monkeypatch.setattr(_vecfeed, "PRUNE_EVERY", 4)
    here, there = two
    mine, theirs = _docs(here), Knowledge(there)
    assert here.scalar("SELECT count(*) FROM vec_changes") <= 8 + 4
    _nearest(mine, 1000)
    _nearest(theirs, 1000)
    behind, current = mine._vectors.index(None), theirs._vectors.index(None)
    for i in range(12):  # `theirs` follows every write; `mine` falls behind the pruning
        _add_doc(theirs, f"later {i}", 3000 + i)
        _nearest(theirs, 1000)
    assert _nearest(mine, 3011, limit=1) == _nearest(theirs, 3011, limit=1) == ["later 11"]
    assert behind.rows_read == ROWS + (ROWS + 12)  # its watermark was pruned: a full load
    assert current.rows_read == ROWS + 12  # it kept up: the changed rows only
