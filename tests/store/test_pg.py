"""What only the PostgreSQL backend has: start-up under an advisory lock, job locks,
psycopg's placeholders, and no password in what it shows."""

import threading
import time

import numpy as np
import pytest

from store import ChunkIn, StoreError
from store._migrations import available
from store.backend import stores_for
from store.clock import utc_now
from store.extraction import AlreadyProcessed, ExtractionQueue
from store.pg import PgDatabase, redact
from store.sql import POSTGRESQL, SQLITE, render
from tests._pg import drop_schema, new_schema


@pytest.fixture
def url(pg_server_url):
    schema, url = new_schema(pg_server_url)
    yield url
    drop_schema(pg_server_url, schema)


def test_replicas_starting_together_migrate_once(url):
    opened, errors = [], []

    def start():
        try:
            opened.append(PgDatabase(url, embed_model="m", embed_dim=4))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    latest = available("store.pg.migrations")[-1][0]
    assert {db.describe().split(", ")[1] for db in opened} == {f"schema v{latest}"}
    assert all(db.vector_state.ok for db in opened)
    for db in opened:
        db.close()


def test_named_markers_render_to_each_drivers_placeholders():
    sql = "SELECT $name, x::vector, 'it''s ? :lit 5%', $$ FROM t WHERE a LIKE '%x'"
    assert render(sql, POSTGRESQL) == (
        "SELECT %(name)s, x::vector, 'it''s ? :lit 5%%', $ FROM t WHERE a LIKE '%%x'"
    )
    assert render(sql, SQLITE) == (
        "SELECT :name, x::vector, 'it''s ? :lit 5%', $ FROM t WHERE a LIKE '%x'"
    )


def test_passwords_never_show():
    assert redact("postgresql://app:s3cret@db:5432/chat") == "postgresql://app:***@db:5432/chat"
    assert redact("postgresql:///chat?host=/run/pg") == "postgresql:///chat?host=/run/pg"


def _hnsw_indexes(db) -> set[str]:
    rows = db.connection().execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
        "AND indexdef LIKE '%USING hnsw%'"
    ).fetchall()
    return {row[0] for row in rows}


def test_bulk_vectors_defers_the_hnsw_indexes_and_builds_them_after(url):
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        stores = stores_for(db)
        alice = stores.users.add("alice")[0].id
        with db.bulk_vectors():
            assert _hnsw_indexes(db) == set()
            fact = stores.facts.create(alice, category="core", fact="x", embedding=[1, 0, 0, 0])
        assert _hnsw_indexes(db) == {"fact_vec_hnsw", "user_memory_vec_hnsw", "chunk_vec_hnsw",
                                     "message_vec_hnsw"}
        hits = stores.facts.search_by_vector(alice, [1.0, 0.1, 0, 0])
        assert [hit.fact.id for hit in hits] == [fact.id]
    finally:
        db.close()


def test_bulk_vectors_of_some_tables_leaves_the_other_indexes(url):
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        with db.bulk_vectors(["chunk_vec"]):
            assert _hnsw_indexes(db) == {"fact_vec_hnsw", "user_memory_vec_hnsw",
                                         "message_vec_hnsw"}
        assert "chunk_vec_hnsw" in _hnsw_indexes(db)
        with pytest.raises(StoreError, match="no vector table"), db.bulk_vectors(["facts"]):
            pass
        assert len(_hnsw_indexes(db)) == 4  # nothing was dropped
    finally:
        db.close()


def test_a_batch_marked_by_another_replica_meanwhile_is_already_processed(url):
    a = PgDatabase(url, embed_model="m", embed_dim=4)
    b = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        stores = stores_for(a)
        alice = stores.users.add("alice")[0].id
        _, message = stores.chats.start_turn(alice, "I live in Lyon")
        outcome = []

        def second_replica():
            try:
                ExtractionQueue(b).mark_processed([message.id], at=utc_now())
                outcome.append("marked")
            except AlreadyProcessed:
                outcome.append("already processed")

        with a.transaction():
            stores.extraction.mark_processed([message.id], at=utc_now())
            other = threading.Thread(target=second_replica)
            other.start()
            time.sleep(0.3)  # B now waits for A's row lock
        other.join(timeout=10)
        assert outcome == ["already processed"]
    finally:
        a.close()
        b.close()


def test_a_row_deleted_by_another_replica_while_embedding_is_saved_skips_its_vector(url):
    a = PgDatabase(url, embed_model="m", embed_dim=4)
    b = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        stores = stores_for(a)
        alice = stores.users.add("alice")[0].id
        fact = stores.facts.create(alice, category="core", fact="Lives in Lyon")
        job = stores.facts.unembedded(limit=10)[0]
        errors = []

        def save_on_a():
            try:
                stores.facts.save_embeddings([(job, [1.0, 0, 0, 0])])
            except Exception as exc:  # reported by the assertion below
                errors.append(exc)

        with b.transaction():  # replica B deletes the fact and commits a moment later
            stores_for(b).facts.delete(alice, fact.id)
            saver = threading.Thread(target=save_on_a)
            saver.start()
            time.sleep(0.3)  # A now waits for B's row lock
        saver.join(timeout=10)
        assert errors == []
        assert stores.facts.vector_count(alice) == 0
    finally:
        a.close()
        b.close()


def _plan_of_knn(db, search) -> str:
    """The plan PostgreSQL picks for the KNN query `search()` sends first."""
    sent = []
    execute = db.execute

    def spy(query, params=None):
        sent.append((query, params))
        return execute(query, params)

    db.execute = spy
    try:
        search()
    finally:
        db.execute = execute
    query, params = next((q, p) for q, p in sent if "<=>" in q)
    return "\n".join(row["QUERY PLAN"] for row in db.execute("EXPLAIN " + query, params))


def test_knn_searches_walk_the_hnsw_indexes(url):
    rng = np.random.default_rng(3)
    db = PgDatabase(url, embed_model="m", embed_dim=16)
    try:
        stores = stores_for(db)
        alice = stores.users.add("alice")[0].id
        with db.bulk_vectors():
            for i in range(1500):
                stores.facts.create(alice, category="core", fact=f"fact {i}")
            jobs = stores.facts.unembedded(limit=2000)
            vectors = rng.standard_normal((len(jobs), 16))
            stores.facts.save_embeddings(list(zip(jobs, vectors, strict=True)))
            saved = stores.knowledge.save(
                owner_id=None, title="t", content="c", source_type="document",
                chunks=[ChunkIn(f"chunk {i}", "en") for i in range(1500)])
            stores.knowledge.save_embeddings(
                list(zip(saved.jobs, rng.standard_normal((len(saved.jobs), 16)), strict=True)))
        query = rng.standard_normal(16).tolist()
        assert "fact_vec_hnsw" in _plan_of_knn(
            db, lambda: stores.facts.search_by_vector(alice, query))
        assert "chunk_vec_hnsw" in _plan_of_knn(
            db, lambda: stores.knowledge.semantic(query, viewer_id=alice))
    finally:
        db.close()


def test_every_connection_plans_searches_for_their_parameters(url):
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        def settings():
            return (db.scalar("SHOW plan_cache_mode"), db.scalar("SHOW random_page_cost"))

        assert settings() == ("force_custom_plan", "1.1")
        # A connection of another thread (hybrid search's second ranking) too.
        seen = []
        worker = threading.Thread(target=lambda: seen.append(settings()))
        worker.start()
        worker.join()
        assert seen == [("force_custom_plan", "1.1")]
    finally:
        db.close()


def _embedding_types(db) -> set[str]:
    rows = db.connection().execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attname = 'embedding' AND attrelid IN (SELECT oid FROM pg_class "
        "WHERE relnamespace = current_schema()::regnamespace)").fetchall()
    return {row[0] for row in rows}


def test_vector_tables_of_an_earlier_version_are_converted_to_halfvec(url):
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    stores = stores_for(db)
    alice = stores.users.add("alice")[0].id
    near = stores.facts.create(alice, category="core", fact="near", embedding=[1, 0, 0, 0])
    stores.facts.create(alice, category="core", fact="far", embedding=[0, 1, 0, 0])
    conn = db.connection()
    for table in ("fact_vec", "user_memory_vec", "chunk_vec", "message_vec"):
        # what versions before halfvec created
        conn.execute(f"DROP INDEX {table}_hnsw")
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector(4)")
        conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw "
                     "(embedding vector_cosine_ops)")
    db.close()
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        assert _embedding_types(db) == {"halfvec(4)"}
        assert len(_hnsw_indexes(db)) == 4
        hits = stores_for(db).facts.search_by_vector(alice, [0.9, 0.1, 0, 0], limit=1)
        assert [hit.fact.id for hit in hits] == [near.id]
    finally:
        db.close()


def test_vectors_of_any_scale_are_stored_and_ranked_by_angle(url):
    # halfvec holds |x| <= 65504: vectors are sent at unit length
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        stores = stores_for(db)
        alice = stores.users.add("alice")[0].id
        big = stores.facts.create(alice, category="core", fact="big", embedding=[1e6, 0, 0, 1e5])
        tiny = stores.facts.create(alice, category="core", fact="tiny",
                                   embedding=[0, 1e-6, 1e-6, 0])
        hits = stores.facts.search_by_vector(alice, [1, 0, 0, 0.1], limit=2)
        assert [hit.fact.id for hit in hits] == [big.id, tiny.id]
        assert hits[0].distance == pytest.approx(0.0, abs=1e-3)  # same direction
    finally:
        db.close()


def test_tokens_issued_before_the_tokens_table_keep_working(url):
    import psycopg

    from store import _migrations
    from store.pg._db import WRITE_TRANSACTION
    from store.users import Users, hash_secret

    with psycopg.connect(url, autocommit=True) as conn:
        _migrations.apply(conn, upto=19, package="store.pg.migrations",
                          begin=WRITE_TRANSACTION, run=lambda c, sql: c.execute(sql),
                          dialect=POSTGRESQL)
        for name, token_id, revoked in (("ann", "a1", None), ("ben", "b1", "2026-01-02")):
            conn.execute("INSERT INTO users(id, name, token_id, token_hash, created_at, "
                         "revoked_at) VALUES (%s, %s, %s, %s, '2026-01-01', %s)",
                         (name, name, token_id, hash_secret("secret"), revoked))
    db = PgDatabase(url, embed_model="m", embed_dim=4)
    try:
        users = Users(db)
        assert users.authenticate("a1.secret").name == "ann"
        assert users.authenticate("b1.secret") is None  # revoked stays revoked
        with pytest.raises(StoreError, match="exists already"):
            users.add("ann")  # account names stay unique
    finally:
        db.close()
