"""store.facts on both backends (SQLite + sqlite-vec, PostgreSQL + pgvector), using 4-d
hand-made vectors."""

from __future__ import annotations

import pytest

from store import NotFound, Users
from store.backend import stores_for
from store.clock import now_iso
from store.facts import InvalidFact

E1, E2, E3 = [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]


@pytest.fixture
def db(open_db):
    return open_db(embed_model="test-4d", embed_dim=4)


@pytest.fixture
def facts(db):
    return stores_for(db).facts


@pytest.fixture
def users(db):
    users = Users(db)
    return users.add("ann")[0].id, users.add("ben")[0].id


def test_create_get_list_and_other_users_see_nothing(facts, users):
    ann, ben = users
    a = facts.create(ann, category="core", fact="  Ann lives in Lyon ")
    facts.create(ann, category="technical", fact="Ann writes Rust")
    assert a.fact == "Ann lives in Lyon" and a.mention_count == 0 and a.last_extracted_at is None
    assert facts.get(ann, a.id) == a
    with pytest.raises(NotFound):
        facts.get(ben, a.id)
    listed, total = facts.list(ann, limit=1)
    assert total == 2 and len(listed) == 1
    assert [f.fact for f in facts.list(ann, category="core")[0]] == ["Ann lives in Lyon"]
    assert facts.list(ben) == ([], 0)
    with pytest.raises(NotFound):
        facts.update(ben, a.id, fact="hijacked")
    with pytest.raises(NotFound):
        facts.delete(ben, a.id)
    assert facts.get(ann, a.id).fact == "Ann lives in Lyon"


def test_invalid_fields_are_rejected_by_name(facts, users):
    with pytest.raises(InvalidFact, match="category"):
        facts.create(users[0], category="gossip", fact="x")
    with pytest.raises(InvalidFact, match="fact"):
        facts.create(users[0], category="core", fact="   ")
    assert facts.list(users[0]) == ([], 0)


def test_extractions_count_mentions_and_order_recent(facts, users):
    ann, ben = users
    old = facts.create(ann, category="core", fact="old fact")
    new = facts.create(ann, category="core", fact="new fact")
    facts.record_extraction(old.id, ann, message_id="m1", extracted_at="2099-01-01T00:00:00Z")
    facts.record_extraction(old.id, ann, message_id="m2", extracted_at="2099-01-02T00:00:00Z")
    got = facts.get(ann, old.id)
    assert got.mention_count == 2 and got.last_extracted_at == "2099-01-02T00:00:00Z"
    assert [f.id for f in facts.recent(ann, limit=5)] == [old.id, new.id]
    with pytest.raises(NotFound):
        facts.record_extraction(old.id, ben, message_id=None, extracted_at=now_iso())


def test_vectors_search_update_supersede_delete(facts, users):
    ann, ben = users
    lyon = facts.create(ann, category="core", fact="lives in Lyon", embedding=E1)
    rust = facts.create(ann, category="technical", fact="writes Rust", embedding=E2)
    facts.create(ben, category="core", fact="ben's fact", embedding=E1)
    hits = facts.search_by_vector(ann, E1, limit=10, max_distance=2.0)
    assert [h.fact.id for h in hits] == [lyon.id, rust.id]
    assert hits[0].distance == pytest.approx(0.0, abs=1e-6)
    assert [h.fact.id for h in facts.search_by_vector(ann, E1, max_distance=0.5)] == [lyon.id]

    # Text changed without a vector: the old vector goes, backfill finds it.
    facts.update(ann, rust.id, fact="writes Go")
    assert [h.fact.id for h in facts.search_by_vector(ann, E2, max_distance=2.0)] == [lyon.id]
    assert [j.row_id for j in facts.unembedded(limit=10)] == [rust.id]
    facts.update(ann, rust.id, fact="writes Zig", embedding=E3)
    assert facts.search_by_vector(ann, E3, limit=1)[0].fact.fact == "writes Zig"

    zig2 = facts.create(ann, category="technical", fact="writes Zig daily", embedding=E3)
    facts.supersede(rust.id, by_id=zig2.id, at=now_iso())
    assert rust.id not in {h.fact.id for h in facts.search_by_vector(ann, E3, max_distance=2)}
    assert rust.id not in {f.id for f in facts.list(ann)[0]}
    assert facts.get(ann, rust.id).superseded_by == zig2.id

    before = facts.vector_count(ann)
    facts.delete(ann, lyon.id)
    assert facts.vector_count(ann) == before - 1
    assert facts.unembedded(limit=10) == []


def test_save_embeddings_skips_changed_text_and_is_idempotent(facts, users):
    ann, _ = users
    a = facts.create(ann, category="core", fact="alpha")
    b = facts.create(ann, category="core", fact="beta")
    jobs = {j.row_id: j for j in facts.unembedded(limit=10)}
    facts.update(ann, b.id, fact="beta changed")
    facts.save_embeddings([(jobs[a.id], E1), (jobs[b.id], E2)])
    assert [j.text for j in facts.unembedded(limit=10)] == ["beta changed"]
    facts.save_embeddings([(jobs[a.id], E1)])  # again: still one vector for `a`
    assert facts.vector_count(ann) == 1


def test_supersede_needs_the_same_user(facts, users):
    ann, ben = users
    a = facts.create(ann, category="core", fact="a")
    b = facts.create(ben, category="core", fact="b")
    with pytest.raises(NotFound):
        facts.supersede(a.id, by_id=b.id, at=now_iso())
    with pytest.raises(NotFound):
        facts.supersede(a.id, by_id=a.id, at=now_iso())


def test_a_vector_made_from_other_text_never_matches(db, facts, users):
    """A vector left from earlier text (written while the row changed, or while vectors
    were off) is in the index but must not bring the fact back."""
    ann, _ = users
    kept = facts.create(ann, category="core", fact="lives in Lyon", embedding=E2)
    moved = facts.create(ann, category="core", fact="lives in Paris")
    with db.transaction():
        facts._vectors.put(ann, [(moved.id, E1, "hash of some earlier text")])
    hits = facts.search_by_vector(ann, E1, limit=10, max_distance=2.0)
    assert [hit.fact.id for hit in hits] == [kept.id]


def test_expired_facts_do_not_take_the_places_asked_for(db, facts, users):
    """Facts past their `valid_to` keep their vectors until the next write; the nearest
    ones being expired still leaves `limit` live facts in the answer."""
    ann, _ = users
    for i in range(3):
        old = facts.create(ann, category="transient", fact=f"was in Rome, trip {i}",
                           embedding=E1)
        db.execute("UPDATE facts SET valid_to = '2000-01-01T00:00:00Z' WHERE id = $id",
                   {"id": old.id})
    near = facts.create(ann, category="core", fact="lives in Lyon", embedding=[0.8, 0.6, 0, 0])
    far = facts.create(ann, category="core", fact="writes Rust", embedding=E2)
    hits = facts.search_by_vector(ann, E1, limit=2, max_distance=2.0)
    assert [hit.fact.id for hit in hits] == [near.id, far.id]
