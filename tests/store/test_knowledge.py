import itertools

import numpy as np
import pytest

from store import ChunkIn, EntryIn, NotFound, VectorUnavailable
from store.backend import stores_for
from store.knowledge import _entries as entries_module


@pytest.fixture
def knowledge(db):
    return stores_for(db, knowledge_rescore=4).knowledge


@pytest.fixture
def people(users):
    return users.add("alice")[0], users.add("bob")[0]


def _vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(8).tolist()


def _add(store, *, owner=None, title="T", text="text", source_type="document", source_id=None,
         vector_seed=None):
    saved = store.save(owner_id=owner, title=title, content=text, source_type=source_type,
                       chunks=[ChunkIn(text, "en")], source_id=source_id)
    if vector_seed is not None:
        store.save_embeddings([(job, _vec(vector_seed)) for job in saved.jobs])
    return saved


def test_save_is_idempotent_by_source_and_replaces_changed_content(knowledge):
    first = _add(knowledge, text="version one", source_id="a.md")
    again = _add(knowledge, text="version one", source_id="a.md")
    assert (first.status, again.status, again.jobs) == ("created", "unchanged", [])
    assert again.entry.id == first.entry.id
    changed = _add(knowledge, text="version two", source_id="a.md")
    assert changed.status == "replaced" and changed.entry.id == first.entry.id
    assert knowledge.read(first.entry.id).content == "version two"
    assert knowledge.keyword("one", viewer_id="x") == []
    assert [h.text for h in knowledge.keyword("two", viewer_id="x")] == ["version two"]


def test_save_without_source_id_dedupes_by_content_hash(knowledge, people):
    alice, bob = people
    a1 = _add(knowledge, owner=alice.id, text="same words")
    a2 = _add(knowledge, owner=alice.id, text="same words")
    b1 = _add(knowledge, owner=bob.id, text="same words")
    assert a2.status == "unchanged" and a2.entry.id == a1.entry.id
    assert b1.status == "created" and b1.entry.id != a1.entry.id


def test_replacing_drops_old_vectors_and_unembedded_lists_new_chunks(knowledge, people):
    alice, _ = people
    _add(knowledge, text="old text", source_id="f", vector_seed=1)
    assert knowledge.unembedded(limit=10) == []
    assert len(knowledge.semantic(_vec(1), viewer_id=alice.id)) == 1
    replaced = _add(knowledge, text="new text", source_id="f")
    assert knowledge.semantic(_vec(1), viewer_id=alice.id) == []
    pending = knowledge.unembedded(limit=10)
    assert [j.row_id for j in pending] == [j.row_id for j in replaced.jobs]
    assert pending[0].text == "T\nnew text"
    knowledge.save_embeddings([(pending[0], _vec(2))])
    assert knowledge.unembedded(limit=10) == []


def test_entries_are_private_to_their_owner_and_shared_ones_visible_to_all(knowledge, people):
    alice, bob = people
    mine = _add(knowledge, owner=alice.id, text="alice secret plan", vector_seed=1)
    shared = _add(knowledge, text="shared handbook plan", vector_seed=2)
    assert knowledge.get(mine.entry.id, viewer_id=alice.id).content == "alice secret plan"
    with pytest.raises(NotFound):
        knowledge.get(mine.entry.id, viewer_id=bob.id)
    assert knowledge.get(shared.entry.id, viewer_id=bob.id).owner_id is None
    assert {h.text for h in knowledge.keyword("plan", viewer_id=bob.id)} == {"shared handbook plan"}
    assert [h.text for h in knowledge.semantic(_vec(1), viewer_id=bob.id, limit=5)] == [
        "shared handbook plan"]
    assert {h.text for h in knowledge.hybrid("plan", _vec(1), viewer_id=alice.id)} == {
        "alice secret plan", "shared handbook plan"}
    assert knowledge.stats(viewer_id=bob.id) == {"total": 1, "by_source_type": {"document": 1}}
    entries, total = knowledge.list(viewer_id=alice.id)
    assert total == 2 and {e.id for e in entries} == {mine.entry.id, shared.entry.id}


def test_source_type_filter_applies_before_the_top_k_cut(knowledge, people):
    alice, _ = people
    # Ten documents sit right at the query vector; the one post is far away.
    for i in range(10):
        _add(knowledge, title=f"d{i}", text=f"deploy guide {i}", vector_seed=7)
    _add(knowledge, title="p", text="deploy story", source_type="post", vector_seed=99)
    for hits in (
        knowledge.semantic(_vec(7), viewer_id=alice.id, source_type="post", limit=3),
        knowledge.keyword("deploy guide story", viewer_id=alice.id, source_type="post", limit=3),
        knowledge.hybrid("deploy", _vec(7), viewer_id=alice.id, source_type="post", limit=3),
    ):
        assert [h.text for h in hits] == ["deploy story"]
    assert knowledge.semantic(_vec(7), viewer_id=alice.id, source_type="code") == []


def test_semantic_matches_exact_cosine_order_when_all_rows_are_rescored(db, people):
    alice, _ = people
    knowledge = stores_for(db, knowledge_rescore=100).knowledge
    vectors = {i: _vec(100 + i) for i in range(30)}
    for i, vector in vectors.items():
        saved = _add(knowledge, title=f"t{i}", text=f"chunk {i}")
        knowledge.save_embeddings([(saved.jobs[0], vector)])
    query = np.asarray(_vec(5))
    exact = sorted(vectors, key=lambda i: -np.dot(vectors[i], query) / np.linalg.norm(vectors[i]))
    hits = knowledge.semantic(query, viewer_id=alice.id, limit=5)
    assert [h.text for h in hits] == [f"chunk {i}" for i in exact[:5]]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    # A candidate set smaller than the limit is widened to the limit.
    narrow = stores_for(db, knowledge_rescore=2).knowledge
    assert len(narrow.semantic(query, viewer_id=alice.id, limit=7)) == 7


def test_delete_removes_chunks_fulltext_and_vectors(knowledge, people):
    alice, _ = people
    saved = _add(knowledge, text="to be removed", source_id="x", vector_seed=3)
    knowledge.delete(saved.entry.id)
    assert knowledge.keyword("removed", viewer_id=alice.id) == []
    assert knowledge.semantic(_vec(3), viewer_id=alice.id) == []
    with pytest.raises(NotFound):
        knowledge.delete(saved.entry.id)
    assert knowledge.delete_source(None, "document", "x") is False


def test_tiers_are_only_written_for_the_content_they_were_made_from(knowledge):
    saved = _add(knowledge, text="first", source_id="s")
    digest = saved.entry.content_hash
    assert knowledge.set_tiers(saved.entry.id, digest, "LLM abstract", "- point")
    assert knowledge.read(saved.entry.id).tiers_by == "llm"
    _add(knowledge, text="second", source_id="s")
    assert not knowledge.set_tiers(saved.entry.id, digest, "stale", "- stale")
    entry = knowledge.read(saved.entry.id)
    assert (entry.abstract, entry.tiers_by) == ("", "extractive")


def test_vector_search_raises_when_the_dimension_conflicts(open_db, knowledge):
    knowledge.db.close()
    store = stores_for(open_db(embed_model="other-model", embed_dim=16)).knowledge
    with pytest.raises(VectorUnavailable):
        store.semantic([0.0] * 16, viewer_id="x")
    saved = _add(store, text="still searchable by keyword")
    assert store.keyword("keyword", viewer_id="x")[0].entry_id == saved.entry.id


def test_a_write_from_another_process_refreshes_the_vector_snapshot(db, open_db, people):
    alice, _ = people
    reader = stores_for(db).knowledge
    assert reader.semantic(_vec(4), viewer_id=alice.id) == []  # snapshot built (empty)
    other = open_db()  # e.g. `chatsvc index`, or another replica
    _add(stores_for(other).knowledge, text="written elsewhere", vector_seed=4)
    other.close()
    assert [h.text for h in reader.semantic(_vec(4), viewer_id=alice.id)] == ["written elsewhere"]


def test_saving_a_vector_again_replaces_it(knowledge, people):
    alice, _ = people
    saved = _add(knowledge, text="re-embedded", vector_seed=1)
    knowledge.save_embeddings([(saved.jobs[0], _vec(2))])
    hits = knowledge.semantic(_vec(2), viewer_id=alice.id)
    assert len(hits) == 1 and hits[0].score == pytest.approx(1.0, abs=1e-3)


def test_keyword_filter_holds_when_the_overfetch_window_is_all_filtered_out(
    knowledge, people, monkeypatch
):
    alice, bob = people
    monkeypatch.setattr("store.hybrid.KEYWORD_OVERFETCH", 2)
    for i in range(6):  # better BM25 matches, all invisible to alice or of another type
        _add(knowledge, owner=bob.id, title="x", text=f"deploy deploy deploy {i}")
        _add(knowledge, title="y", text=f"deploy deploy {i}", source_type="code")
    _add(knowledge, title="z", text="deploy notes with many other words in it")
    hits = knowledge.keyword("deploy", viewer_id=alice.id, source_type="document", limit=1)
    assert [h.title for h in hits] == ["z"]


# The in-memory index exists on SQLite only (PostgreSQL searches its HNSW index).
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_in_process_writes_patch_the_index(knowledge, people):
    alice, _ = people
    first = _add(knowledge, text="first", vector_seed=1)
    assert len(knowledge.semantic(_vec(1), viewer_id=alice.id)) == 1
    index = knowledge._vectors.index(None)
    read = index.rows_read
    _add(knowledge, owner=alice.id, text="second", vector_seed=2, source_type="note")
    assert [h.text for h in knowledge.semantic(_vec(2), viewer_id=alice.id, source_type="note",
                                               limit=1)] == ["second"]
    assert index.rows_read == read + 1  # the new row only, no reload
    knowledge.delete(first.entry.id)
    assert len(knowledge.semantic(_vec(2), viewer_id=alice.id)) == 1 == index.index.size
    assert index.rows_read == read + 1
    knowledge.save_embeddings([])  # nothing to do


def test_hybrid_inside_a_transaction_sees_its_uncommitted_chunks(db, knowledge):
    # On PostgreSQL the two rankings otherwise run on two connections at once; the
    # second connection would not see this transaction's writes.
    with db.transaction():
        _add(knowledge, title="new", text="freshly written runbook", vector_seed=9)
        hits = knowledge.hybrid("runbook", _vec(9), viewer_id="x", limit=5)
        assert [h.text for h in hits] == ["freshly written runbook"]
        assert hits[0].score == pytest.approx(1.0)  # first in both rankings


def test_hybrid_takes_its_keyword_half_ahead_and_ranks_again_without_it_when_stale(
        knowledge, people):
    alice, _ = people
    match = _add(knowledge, title="Z", text="zeppelin timetable", vector_seed=1)
    for seed in (2, 3, 4):
        _add(knowledge, title=f"other {seed}", text=f"unrelated note {seed}", vector_seed=seed)
    options = {"viewer_id": alice.id, "limit": 2}
    ahead = knowledge.hybrid_keyword("zeppelin", **options)
    plain = knowledge.hybrid("zeppelin", _vec(2), **options)
    assert knowledge.hybrid("zeppelin", _vec(2), keyword=ahead, **options) == plain
    assert "zeppelin timetable" in [h.text for h in plain]
    # Deleted after its keyword half was taken (a chat turn's, while it embeds): the
    # stale ranking still names it, so the hits are ranked again from scratch.
    knowledge.delete(match.entry.id)
    hits = knowledge.hybrid("zeppelin", _vec(2), keyword=ahead, **options)
    assert [h.text for h in hits] == [h.text for h in knowledge.hybrid("zeppelin", _vec(2),
                                                                        **options)]
    assert len(hits) == 2 and "zeppelin timetable" not in [h.text for h in hits]


def _item(text, *, source_id=None, title="T"):
    return EntryIn(title, text, "document", [ChunkIn(text, "en")], source_id=source_id)


def test_save_many_gives_what_saving_one_by_one_gives(knowledge, monkeypatch):
    monkeypatch.setattr(entries_module, "SAVE_BATCH", 2)  # a replace across batches too
    first = knowledge.save_many(None, [_item("alpha one", source_id="a.md"),
                                       _item("shared words"),
                                       _item("alpha two", source_id="a.md"),
                                       _item("shared words"),
                                       _item("beta", source_id="b.md")])
    assert [s.status for s in first] == ["created", "created", "replaced", "unchanged",
                                         "created"]
    assert first[0].entry.id == first[2].entry.id and first[1].entry.id == first[3].entry.id
    # Jobs only for the chunks each entry ends with: nothing embeds "alpha one".
    texts = sorted(job.text for saved in first for job in saved.jobs)
    assert texts == ["T\nalpha two", "T\nbeta", "T\nshared words"]
    assert knowledge.keyword("one", viewer_id="x") == []
    assert [h.text for h in knowledge.keyword("alpha", viewer_id="x")] == ["alpha two"]
    assert knowledge.read(first[0].entry.id).chunks == 1
    again = knowledge.save_many(None, [_item("alpha two", source_id="a.md"),
                                       _item("beta changed", source_id="b.md")])
    assert [(s.status, len(s.jobs)) for s in again] == [("unchanged", 0), ("replaced", 1)]
    assert knowledge.pending_count() == 3  # nothing embedded yet: a2, shared, beta changed


def test_save_many_within_one_batch_keeps_only_the_last_items_chunks(knowledge):
    saved = knowledge.save_many(None, [_item("gamma one", source_id="g.md"),
                                       _item("gamma two", source_id="g.md")])
    assert [(s.status, [j.text for j in s.jobs]) for s in saved] == [
        ("created", []), ("replaced", ["T\ngamma two"])]
    assert [h.text for h in knowledge.keyword("gamma", viewer_id="x")] == ["gamma two"]


def test_save_many_writes_nothing_when_one_item_fails(knowledge, db):
    bad = EntryIn("T", "x", "document", [ChunkIn("x", "en")], metadata={"not": {1, 2}})
    with pytest.raises(TypeError):
        knowledge.save_many(None, [_item("kept?"), bad])
    assert knowledge.list(viewer_id="x")[1] == 0
