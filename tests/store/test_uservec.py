"""In-memory KNN over fact_vec / user_memory_vec (store/sqlite/_vectors.py): agreement with
vec0's exact KNN, and visibility of writes made through another Database on the file
(another process: its own connections and its own in-memory copy)."""

from __future__ import annotations

import numpy as np
import pytest

from store import SqliteDatabase, Users
from store.contract import EmbedJob
from store.facts import Facts, content_hash
from store.memory import Memories
from store.sqlite import _vecindex

DIM = 16


def _open(path) -> SqliteDatabase:
    return SqliteDatabase(path, embed_model="test-16d", embed_dim=DIM)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "v.sqlite3"


@pytest.fixture
def dbs(path):
    first = _open(path)
    second = _open(path)
    yield first, second
    second.close()
    first.close()


def _vec(rng) -> list[float]:
    return rng.standard_normal(DIM).astype(np.float32).tolist()


def _vec0_knn(db, table, id_column, user_id, vector, k):
    blob = np.asarray(vector, dtype=np.float32).tobytes()
    return db.connection().execute(
        f"SELECT {id_column}, distance FROM {table} WHERE embedding MATCH ? AND k = ? "
        "AND user_id = ? ORDER BY distance", (blob, k, user_id)).fetchall()


def test_fact_search_agrees_with_vec0_knn(dbs):
    db, _ = dbs
    rng = np.random.default_rng(7)
    ann, ben = (Users(db).add(name)[0].id for name in ("ann", "ben"))
    facts = Facts(db)
    for i in range(300):
        facts.create(ann if i % 3 else ben, category="core", fact=f"fact {i}",
                     embedding=_vec(rng))
    for _ in range(20):
        query = _vec(rng)
        exact = _vec0_knn(db, "fact_vec", "fact_id", ann, query, 10)
        hits = facts.search_by_vector(ann, query, limit=10)
        assert [h.fact.id for h in hits] == [row[0] for row in exact]
        assert [h.distance for h in hits] == pytest.approx([row[1] for row in exact], abs=1e-5)
        assert all(h.fact.user_id == ann for h in hits)
        cut = (exact[4][1] + exact[5][1]) / 2  # float rounding differs in the last bits
        assert [h.fact.id for h in facts.search_by_vector(ann, query, max_distance=cut)] == [
            row[0] for row in exact[:5]]


def test_writes_patch_the_cached_copy_like_vec0(dbs):
    db, _ = dbs
    rng = np.random.default_rng(15)
    ann = Users(db).add("ann")[0].id
    facts = Facts(db)
    made = [facts.create(ann, category="core", fact=f"fact {i}", embedding=_vec(rng))
            for i in range(50)]
    query = _vec(rng)
    assert facts.search_by_vector(ann, query, limit=5)  # cached now
    texts = [f"later {i}" for i in range(40)]
    later = [facts.create(ann, category="core", fact=text) for text in texts]
    jobs = [EmbedJob(f.id, f.fact, content_hash(f.fact)) for f in later]
    facts.save_embeddings([(job, _vec(rng)) for job in jobs] + [(jobs[0], query)])
    facts.update(ann, made[0].id, fact="changed", embedding=_vec(rng))
    facts.delete(ann, made[1].id)
    for _ in range(10):
        exact = _vec0_knn(db, "fact_vec", "fact_id", ann, query, 10)
        assert [h.fact.id for h in facts.search_by_vector(ann, query, limit=10, max_distance=2)
                ] == [row[0] for row in exact]
        query = _vec(rng)


def test_memory_recall_agrees_with_vec0_knn(dbs):
    db, _ = dbs
    rng = np.random.default_rng(8)
    ann, ben = (Users(db).add(name)[0].id for name in ("ann", "ben"))
    memories = Memories(db)
    for i in range(200):
        memories.create(ann if i % 4 else ben, type="note", scope="global",
                        content=f"memory {i}", embedding=_vec(rng))
    for _ in range(20):
        query = _vec(rng)
        exact = _vec0_knn(db, "user_memory_vec", "memory_id", ann, query, 8)
        recalled = memories.recall(ann, query, k=8, project_id=None)
        assert [m.id for m, _ in recalled] == [row[0] for row in exact]
        assert [d for _, d in recalled] == pytest.approx([row[1] for row in exact], abs=1e-5)


def test_fact_writes_through_another_database_are_seen(dbs):
    here, there = dbs
    rng = np.random.default_rng(9)
    ann = Users(here).add("ann")[0].id
    mine, theirs = Facts(here), Facts(there)
    query = _vec(rng)
    old = mine.create(ann, category="core", fact="old", embedding=_vec(rng))
    assert [h.fact.id for h in mine.search_by_vector(ann, query, limit=5, max_distance=2)] == [
        old.id]
    new = theirs.create(ann, category="core", fact="new", embedding=query)
    assert [h.fact.id for h in mine.search_by_vector(ann, query, limit=5, max_distance=2)] == [
        new.id, old.id]
    theirs.update(ann, new.id, fact="new text, no vector yet")
    theirs.supersede(old.id, by_id=new.id, at="2000-01-01T00:00:00Z")
    assert mine.search_by_vector(ann, query, limit=5, max_distance=2) == []
    text = "new text, no vector yet"
    theirs.save_embeddings([(EmbedJob(new.id, text, content_hash(text)), query)])
    assert [h.fact.id for h in mine.search_by_vector(ann, query, limit=5)] == [new.id]
    theirs.delete(ann, new.id)
    assert mine.search_by_vector(ann, query, limit=5) == []


def test_memory_writes_through_another_database_are_seen(dbs):
    here, there = dbs
    rng = np.random.default_rng(10)
    ann = Users(here).add("ann")[0].id
    mine, theirs = Memories(here), Memories(there)
    query = _vec(rng)
    assert mine.recall(ann, query, k=5, project_id=None) == []
    made = theirs.create(ann, type="note", scope="global", content="a", embedding=query)
    assert [m.id for m, _ in mine.recall(ann, query, k=5, project_id=None)] == [made.id]
    theirs.update(ann, made.id, type="note", scope="global", project_id=None, content="b")
    assert mine.recall(ann, query, k=5, project_id=None) == []
    theirs.update(ann, made.id, type="note", scope="global", project_id=None, content="c",
                  embedding=query)
    assert [m.content for m, _ in mine.recall(ann, query, k=5, project_id=None)] == ["c"]
    theirs.delete(ann, made.id)
    assert mine.recall(ann, query, k=5, project_id=None) == []


def test_stale_vector_left_behind_is_never_returned(path):
    db = _open(path)
    rng = np.random.default_rng(11)
    ann = Users(db).add("ann")[0].id
    query = _vec(rng)
    fact = Facts(db).create(ann, category="core", fact="first", embedding=query)
    memory = Memories(db).create(ann, type="note", scope="global", content="m",
                                 embedding=query)
    with db.transaction() as conn:  # edits made while vectors were off leave vectors behind
        conn.execute("UPDATE facts SET fact = 'second', content_hash = ? WHERE id = ?",
                     (content_hash("second"), fact.id))
        conn.execute("UPDATE user_memory SET content = 'n', content_hash = 'x' WHERE id = ?",
                     (memory.id,))
    assert Facts(db).search_by_vector(ann, query, max_distance=2) == []
    assert Memories(db).recall(ann, query, k=5, project_id=None) == []
    db.close()


def test_reindex_empties_the_in_memory_copy(dbs):
    db, other = dbs
    rng = np.random.default_rng(12)
    ann = Users(db).add("ann")[0].id
    facts, memories = Facts(db), Memories(db)
    query = _vec(rng)
    facts.create(ann, category="core", fact="f", embedding=query)
    memories.create(ann, type="note", scope="global", content="m", embedding=query)
    assert facts.search_by_vector(ann, query) and memories.recall(ann, query, k=3,
                                                                   project_id=None)
    other.reset_vectors()  # `chatsvc reindex` in another process
    assert facts.search_by_vector(ann, query) == []
    assert memories.recall(ann, query, k=3, project_id=None) == []
    jobs = facts.unembedded(limit=10)
    facts.save_embeddings([(job, query) for job in jobs])
    assert [h.fact.fact for h in facts.search_by_vector(ann, query)] == ["f"]


def test_a_rolled_back_write_is_not_seen(path):
    db = _open(path)
    rng = np.random.default_rng(13)
    ann = Users(db).add("ann")[0].id
    facts = Facts(db)
    query = _vec(rng)
    kept = facts.create(ann, category="core", fact="kept", embedding=query)
    assert [h.fact.id for h in facts.search_by_vector(ann, query)] == [kept.id]
    with pytest.raises(RuntimeError), db.transaction():
        facts._vectors.drop([kept.id], user_id=ann)
        raise RuntimeError("abort")
    assert [h.fact.id for h in facts.search_by_vector(ann, query)] == [kept.id]
    db.close()


def test_per_user_indexes_drop_the_least_recently_used(path, monkeypatch):
    monkeypatch.setattr("store.sqlite._vectors.PARTITIONS", 2)
    db = _open(path)
    rng = np.random.default_rng(14)
    facts = Facts(db)
    users = {name: Users(db).add(name)[0].id for name in "abc"}
    for name, user_id in users.items():
        facts.create(user_id, category="core", fact=f"{name} fact", embedding=_vec(rng))
    held = {}
    for name in ("a", "b", "a", "c", "a", "b"):
        assert [h.fact.fact for h in facts.search_by_vector(
            users[name], _vec(rng), max_distance=2)] == [f"{name} fact"]
        index = facts._vectors.index(users[name])
        held.setdefault(name, []).append(index)
    assert held["a"][0] is held["a"][1] is held["a"][2]  # kept while among the two latest
    assert held["b"][0] is not held["b"][1]  # dropped when c came, made again
    db.close()

def test_float16_rows_score_as_float32_with_the_values_of_a_direct_cast():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]
    assert np.array_equal(_vecindex._float32(finite).view(np.uint32),
                          finite.astype(np.float32).view(np.uint32))
