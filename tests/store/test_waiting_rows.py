"""Rows waiting for a vector are known from the source row (`embedded_hash`), kept in
step with the vector tables by every write, drop and reset, on both backends."""

from store.backend import stores_for
from store.facts import VECTORS as FACTS
from store.knowledge._records import VECTORS as CHUNKS
from store.memory import VECTORS as MEMORY
from store.recall._index import VECTORS as MESSAGES
from store.vectors import EMBEDDED


def _facts(db, n):
    stores = stores_for(db)
    alice = stores.users.add("alice")[0].id
    facts = [stores.facts.create(alice, category="core", fact=f"fact {i}") for i in range(n)]
    return stores, alice, facts


def test_saved_vectors_leave_the_waiting_rows_and_a_text_change_returns_them(db):
    stores, _, _ = _facts(db, 3)
    assert stores.facts.pending_count() == 3
    jobs = stores.facts.unembedded(limit=10)
    stores.facts.save_embeddings([(job, [1.0, 0, 0, 0, 0, 0, 0, 0]) for job in jobs[:2]])
    assert stores.facts.pending_count() == 1
    assert [job.row_id for job in stores.facts.unembedded(limit=10)] == [jobs[2].row_id]
    # New text: the old vector no longer counts.
    db.execute("UPDATE facts SET fact = 'changed', content_hash = 'h2' WHERE id = $id",
               {"id": jobs[0].row_id})
    assert stores.facts.pending_count() == 2


def test_a_dropped_vector_makes_its_row_wait_again(db):
    stores, alice, facts = _facts(db, 1)
    stores.facts.save_embeddings([(job, [0, 1.0, 0, 0, 0, 0, 0, 0])
                                  for job in stores.facts.unembedded(limit=10)])
    with db.transaction():
        stores.facts._vectors.drop([facts[0].id], user_id=alice)
    assert stores.facts.pending_count() == 1


def test_a_reset_makes_every_row_wait(db):
    stores, _, _ = _facts(db, 2)
    stores.facts.save_embeddings([(job, [0, 0, 1.0, 0, 0, 0, 0, 0])
                                  for job in stores.facts.unembedded(limit=10)])
    assert stores.facts.pending_count() == 0
    db.reset_vectors()
    assert stores.facts.pending_count() == 2


def test_vectors_saved_before_the_column_existed_are_adopted_on_open(db, open_db):
    stores, _, _ = _facts(db, 3)
    jobs = stores.facts.unembedded(limit=10)
    stores.facts.save_embeddings([(job, [0, 0, 0, 1.0, 0, 0, 0, 0]) for job in jobs[:2]])
    # As a store written before migration 0017 looks: vectors, and no marks.
    db.execute("UPDATE facts SET embedded_hash = NULL")
    assert stores.facts.pending_count() == 3
    reopened = stores_for(open_db())
    assert reopened.facts.pending_count() == 1  # only the row that never had a vector


def test_every_vector_table_names_its_source_rows():
    specs = (FACTS, CHUNKS, MEMORY, MESSAGES)
    assert {s.table: (s.source.split()[0], s.id_column) for s in specs} == EMBEDDED


def test_a_batch_large_enough_for_copy_is_saved_replaced_and_marked(db):
    """100 rows: PostgreSQL stages them through COPY (small batches insert row by row);
    both backends must end with the same vectors and marks."""
    stores, alice, _ = _facts(db, 100)

    def unit(i: int, shift: int) -> list[float]:
        return [1.0 if d == (i + shift) % 8 else 0.0 for d in range(8)]

    jobs = stores.facts.unembedded(limit=200)
    stores.facts.save_embeddings([(job, unit(i, 0)) for i, job in enumerate(jobs)])
    assert stores.facts.pending_count() == 0
    by_id = {job.row_id: i for i, job in enumerate(jobs)}
    hits = stores.facts.search_by_vector(alice, unit(3, 0), limit=100)
    assert {by_id[h.fact.id] % 8 for h in hits if h.distance < 1e-4} == {3}
    # The same rows again, with other vectors: each is replaced, none added.
    stores.facts.save_embeddings([(job, unit(i, 1)) for i, job in enumerate(jobs)])
    assert stores.facts._vectors.count(alice) == 100
    hits = stores.facts.search_by_vector(alice, unit(3, 1), limit=100)
    assert {by_id[h.fact.id] % 8 for h in hits if h.distance < 1e-4} == {3}
    assert len([h for h in hits if h.distance < 1e-4]) == len([i for i in range(100)
                                                               if i % 8 == 3])
