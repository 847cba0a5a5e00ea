"""Memories on both backends (SQLite + sqlite-vec, PostgreSQL + pgvector), using
hand-made 4-d vectors so that nearest-neighbour order is known exactly."""

import pytest

from store import ConstraintViolation, Memories, NotFound, SqliteDatabase, Users, VectorUnavailable
from store.backend import stores_for
from store.sqlite._schema import VECTOR_TABLES

EAST, NORTH, WEST = [1.0, 0, 0, 0], [0, 1.0, 0, 0], [-1.0, 0, 0, 0]
NORTH_EAST = [0.9, 0.1, 0, 0]


@pytest.fixture
def db(open_db):
    return open_db(embed_model="test-4d", embed_dim=4)


@pytest.fixture
def store(db):
    return stores_for(db).memories


@pytest.fixture
def owners(db):
    users = Users(db)
    return users.add("alice")[0].id, users.add("bob")[0].id


def note(store, user_id, content, vector=None, **kw):
    kw.setdefault("type", "note")
    kw.setdefault("scope", "global")
    return store.create(user_id, content=content, embedding=vector, **kw)


def vector_rows(db):
    return db.scalar("SELECT count(*) FROM user_memory_vec")


def test_table_is_registered_for_reindex():
    assert "user_memory_vec" in VECTOR_TABLES
    assert Memories.table == "user_memory_vec"


def test_crud_and_soft_delete(db, store, owners):
    alice, _ = owners
    memory = note(store, alice, "likes tea", EAST)
    assert store.get(alice, memory.id) == memory
    changed = store.update(alice, memory.id, type="preference", scope="project",
                           project_id="p1", content="likes green tea", embedding=NORTH)
    assert (changed.type, changed.scope, changed.project_id) == ("preference", "project", "p1")
    assert changed.created_at == memory.created_at and changed.updated_at > memory.updated_at
    store.delete(alice, memory.id)
    with pytest.raises(NotFound):
        store.get(alice, memory.id)
    with pytest.raises(NotFound):
        store.delete(alice, memory.id)
    assert store.list(alice) == []
    tombstone = db.execute(
        "SELECT deleted_at FROM user_memory WHERE id = $id", {"id": memory.id}).fetchone()
    assert tombstone["deleted_at"] is not None
    assert vector_rows(db) == 0


def test_another_users_id_is_not_found(store, owners):
    alice, bob = owners
    memory = note(store, alice, "likes tea", EAST)
    with pytest.raises(NotFound):
        store.get(bob, memory.id)
    with pytest.raises(NotFound):
        store.update(bob, memory.id, type="note", scope="global", project_id=None, content="x")
    with pytest.raises(NotFound):
        store.delete(bob, memory.id)
    assert store.list(bob) == []
    assert store.get(alice, memory.id).content == "likes tea"


def test_schema_refuses_project_scope_without_project(store, owners):
    with pytest.raises(ConstraintViolation):
        note(store, owners[0], "x", scope="project")
    with pytest.raises(ConstraintViolation):
        note(store, owners[0], "x", type="secret")


def test_version_changes_with_every_write_and_per_user(store, owners):
    alice, bob = owners
    seen = [store.version(alice)]
    memory = note(store, alice, "a", EAST)
    seen.append(store.version(alice))
    store.update(alice, memory.id, type="note", scope="global", project_id=None, content="b")
    seen.append(store.version(alice))
    store.delete(alice, memory.id)
    seen.append(store.version(alice))
    assert len(set(seen)) == 4
    assert store.version(bob) == 0
    assert store.snapshot(alice, None).version == seen[-1]


def test_project_scope_applies_only_in_its_project(store, owners):
    alice, _ = owners
    note(store, alice, "global", EAST)
    note(store, alice, "in p1", EAST, scope="project", project_id="p1")
    note(store, alice, "in p2", EAST, scope="project", project_id="p2")

    def contents(memories):
        return sorted(m.content for m in memories)

    assert contents(store.snapshot(alice, None).memories) == ["global"]
    assert contents(store.snapshot(alice, "p1").memories) == ["global", "in p1"]
    assert contents(store.list(alice, project_id="p2")) == ["global", "in p2"]
    assert contents(store.list(alice)) == ["global", "in p1", "in p2"]
    recalled = store.recall(alice, EAST, k=20, project_id="p1")
    assert contents(m for m, _ in recalled) == ["global", "in p1"]


def test_memories_of_other_projects_do_not_take_the_places_asked_for(store, owners):
    """The nearest memories belong to another project: recall still gives `k` that
    apply (SQLite filters after its in-memory KNN, which asks for spare rows)."""
    alice, _ = owners
    for i in range(3):
        note(store, alice, f"in p2 #{i}", EAST, scope="project", project_id="p2")
    north = note(store, alice, "north", NORTH)
    west = note(store, alice, "west", WEST)
    hits = store.recall(alice, EAST, k=2, project_id="p1")
    assert [m.id for m, _ in hits] == [north.id, west.id]


def test_recall_is_nearest_first_and_per_user(store, owners):
    alice, bob = owners
    east = note(store, alice, "east", EAST)
    north = note(store, alice, "north", NORTH)
    west = note(store, alice, "west", WEST)
    note(store, bob, "bob east", EAST)
    hits = store.recall(alice, NORTH_EAST, k=20, project_id=None)
    assert [m.id for m, _ in hits] == [east.id, north.id, west.id]
    distances = [d for _, d in hits]
    assert distances == sorted(distances) and 0 <= distances[0] < 0.01
    assert len(store.recall(alice, NORTH_EAST, k=1, project_id=None)) == 1


def test_deleted_memory_is_never_recalled(db, store, owners):
    alice, _ = owners
    gone = note(store, alice, "gone", EAST)
    kept = note(store, alice, "kept", WEST)
    store.delete(alice, gone.id)
    assert [m.id for m, _ in store.recall(alice, EAST, k=20, project_id=None)] == [kept.id]
    assert vector_rows(db) == 1
    assert [job.row_id for job in store.unembedded(limit=10)] == []


def test_new_content_replaces_or_drops_the_vector(db, store, owners):
    alice, _ = owners
    memory = note(store, alice, "east", EAST)
    store.update(alice, memory.id, type="note", scope="global", project_id=None,
                 content="north", embedding=NORTH)
    [(hit, distance)] = store.recall(alice, NORTH, k=5, project_id=None)
    assert hit.content == "north" and distance < 0.01
    # Re-typing without new content keeps the vector.
    store.update(alice, memory.id, type="profile", scope="global", project_id=None,
                 content="north")
    assert len(store.recall(alice, NORTH, k=5, project_id=None)) == 1
    # New content whose embedding failed: the old vector must not match the new text.
    store.update(alice, memory.id, type="profile", scope="global", project_id=None,
                 content="west")
    assert store.recall(alice, NORTH, k=5, project_id=None) == []
    assert [job.text for job in store.unembedded(limit=10)] == ["west"]


def test_backfill_fills_missing_vectors_and_skips_changed_rows(store, owners):
    alice, _ = owners
    first = note(store, alice, "first")
    second = note(store, alice, "second")
    jobs = {job.row_id: job for job in store.unembedded(limit=10)}
    assert set(jobs) == {first.id, second.id}
    # `second` changes between the job and its save: its stale vector is not stored.
    store.update(alice, second.id, type="note", scope="global", project_id=None, content="2nd")
    store.save_embeddings([(jobs[first.id], EAST), (jobs[second.id], NORTH)])
    assert [job.text for job in store.unembedded(limit=10)] == ["2nd"]
    assert [m.id for m, _ in store.recall(alice, EAST, k=5, project_id=None)] == [first.id]
    store.save_embeddings([(store.unembedded(limit=10)[0], WEST)])
    assert store.unembedded(limit=10) == []


def test_without_sqlite_vec_crud_works_and_recall_says_why(tmp_path):
    db = SqliteDatabase(tmp_path / "novec.sqlite3", embed_model="test-4d", embed_dim=4,
                  sqlite_vec_path="/nonexistent")
    try:
        assert not db.vector_state.ok
        alice = Users(db).add("alice")[0].id
        store = Memories(db)
        memory = note(store, alice, "still saved", EAST)
        store.update(alice, memory.id, type="note", scope="global", project_id=None,
                     content="changed")
        assert [m.content for m in store.snapshot(alice, None).memories] == ["changed"]
        with pytest.raises(VectorUnavailable, match="sqlite-vec"):
            store.recall(alice, EAST, k=5, project_id=None)
        store.delete(alice, memory.id)
        assert store.list(alice) == []
    finally:
        db.close()


def test_reindex_after_a_dimension_conflict_rebuilds_the_index(open_db):
    old = open_db(embed_model="old-3d", embed_dim=3)
    alice = Users(old).add("alice")[0].id
    memories = stores_for(old).memories
    live = note(memories, alice, "live", [1.0, 0, 0])
    gone = note(memories, alice, "gone", [0, 1.0, 0])
    memories.delete(alice, gone.id)
    old.close()

    db = open_db(embed_model="test-4d", embed_dim=4)
    store = stores_for(db).memories
    assert db.vector_state.detail.startswith("CONFLICT")
    with pytest.raises(VectorUnavailable, match="reindex"):
        store.recall(alice, EAST, k=5, project_id=None)
    db.reset_vectors()  # what `chatsvc reindex` does first
    jobs = store.unembedded(limit=10)
    assert [job.row_id for job in jobs] == [live.id]
    store.save_embeddings([(jobs[0], EAST)])
    assert [m.id for m, _ in store.recall(alice, EAST, k=5, project_id=None)] == [live.id]
