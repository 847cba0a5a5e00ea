"""Deleting an account removes every row of the user in every table, vectors and
full-text rows included, and nothing of anyone else (SQLite and PostgreSQL)."""

from datetime import UTC, datetime

import numpy as np
import pytest

from store import ChunkIn, NotFound
from store.facts import Evidence
from store.images import ImageIn, add_images
from store.sql import SQLITE
from store.sqlite import _vecfeed
from tests import _seed

OWNER_COLUMNS = ("user_id", "owner_id", "author_id")


def _vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(8).tolist()


def _owner_columns(db) -> dict[str, str]:
    """table -> its owner column, for every table that names a user (found in the
    schema, so a domain added later is counted without touching this test)."""
    if db.dialect == SQLITE:
        rows = db.execute(
            "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table'").fetchall()
    else:
        rows = db.execute(
            "SELECT table_name AS t, column_name AS c FROM information_schema.columns "
            "WHERE table_schema = current_schema()").fetchall()
    owners = {row["t"]: row["c"] for row in rows if row["c"] in OWNER_COLUMNS}
    return {**owners, "users": "id"}  # users.owner_id is an end user's account


def _footprint(db, user_id: str, chunk_ids: list[str]) -> dict[str, int]:
    """Rows of `user_id` per table, plus the rows keyed by its knowledge chunks and the
    snapshot files of its in-memory vector indexes (SQLite)."""
    counts = {table: db.scalar(f"SELECT count(*) FROM {table} WHERE {column} = $u",
                               {"u": user_id})
              for table, column in _owner_columns(db).items()}
    marks = ", ".join(f"'{chunk}'" for chunk in chunk_ids)
    counts["knowledge_chunks"] = db.scalar(
        f"SELECT count(*) FROM knowledge_chunks WHERE id IN ({marks})")
    counts["chunk_vec"] = db.scalar(f"SELECT count(*) FROM chunk_vec WHERE chunk_id IN ({marks})")
    counts["knowledge_fts"] = db.scalar(
        "SELECT count(*) FROM knowledge_fts WHERE rowid IN "
        f"(SELECT seq FROM knowledge_chunks WHERE id IN ({marks}))") + db.scalar(
        "SELECT count(*) FROM knowledge_fts f WHERE NOT EXISTS "
        "(SELECT 1 FROM knowledge_chunks c WHERE c.seq = f.rowid)")  # orphans count too
    if db.dialect == SQLITE:  # the change feed has a user_id column, counted above
        counts["vector_files"] = sum(_vecfeed.snapshot_file(db.path, table, user_id).exists()
                                     for table in ("fact_vec", "user_memory_vec"))
    return counts


def _fill(stores, user, seed: int) -> list[str]:
    """Data of every domain for `user`; returns its knowledge chunk ids."""
    conv = _seed.conversation(stores.db, user.id, title="trip")
    message = _seed.message(stores.db, user.id, conv, "I live in Lyon")
    answer = _seed.message(stores.db, user.id, conv, "Noted", role="assistant")
    stores.chats.rate(user.id, answer, "up", None)
    with stores.db.transaction():
        add_images(stores.db, user.id, message, [ImageIn(url="https://example.com/a.png")],
                   "2026-01-01T00:00:00Z")
    fact = stores.facts.create(user.id, category="core", fact="Lives in Lyon",
                               embedding=_vec(seed))
    stores.facts.record_extraction(fact.id, user.id, message_id=message,
                                   extracted_at="2026-01-01T00:00:00Z")
    stores.facts.add_evidence(user.id, fact.id, [
        Evidence(message, conv, "I live in Lyon", "2026-01-01T00:00:00Z")])
    stores.facts.record_forget(user.id, message_id=message, facts=1)
    stores.fact_sheets.save(user.id, facts_json="[]", fact_count=0, dedup_log=None,
                            now=datetime.now(UTC))
    stores.memories.create(user.id, type="note", scope="global", content="likes tea",
                           embedding=_vec(seed + 1))
    saved = stores.knowledge.save(owner_id=user.id, title="notes", content="a b",
                                  source_type="document", chunks=[ChunkIn("a b", "en")])
    stores.knowledge.save_embeddings([(job, _vec(seed + 2)) for job in saved.jobs])
    stores.posts.create(author_id=user.id, title="hello", content="world", excerpt="w",
                        published=True)
    stores.jobs.create(user.id, kind="index", entry_id=saved.entry.id)
    # The messages' recall index: keys, full text and vectors.
    keyed = stores.messages.unembedded(limit=100)
    stores.messages.save_embeddings([(job, _vec(seed + 3 + i)) for i, job in enumerate(keyed)])
    return [job.row_id for job in saved.jobs]


@pytest.fixture
def two_users(stores):
    alice, bob = stores.users.add("alice")[0], stores.users.add("bob")[0]
    shared = stores.knowledge.save(owner_id=None, title="guide", content="shared text",
                                   source_type="document", chunks=[ChunkIn("shared", "en")])
    stores.knowledge.save_embeddings([(job, _vec(9)) for job in shared.jobs])
    return alice, _fill(stores, alice, 1), bob, _fill(stores, bob, 5)


def test_delete_removes_every_row_of_the_user_and_nothing_else(stores, two_users, monkeypatch):
    alice, alice_chunks, bob, bob_chunks = two_users
    db = stores.db
    monkeypatch.setattr("store.sqlite._vecfeed.PERSIST_MIN_ROWS", 1)  # files for tiny indexes
    # Search once so the in-memory vector copies hold alice's partition.
    assert stores.facts.search_by_vector(alice.id, _vec(1), limit=5)
    before = _footprint(db, alice.id, alice_chunks)
    assert {"users", "conversations", "messages", "facts", "fact_extractions", "fact_evidence",
            "fact_sheets",
            "user_memory", "user_memory_versions", "knowledge_entries", "posts", "fact_vec",
            "user_memory_vec"} <= set(_owner_columns(db))
    # Every table is filled: a domain added later must be seeded in `_fill` too.
    assert all(count > 0 for count in before.values()), before
    bob_before = _footprint(db, bob.id, bob_chunks)
    posts_before = db.scalar("SELECT count(*) FROM posts")

    stores.accounts.delete(alice.id)

    assert _footprint(db, alice.id, alice_chunks) == dict.fromkeys(before, 0)
    assert _footprint(db, bob.id, bob_chunks) == bob_before
    # Published posts stay, unattributed; the shared entry stays.
    assert db.scalar("SELECT count(*) FROM posts") == posts_before
    assert db.scalar("SELECT count(*) FROM knowledge_entries WHERE owner_id IS NULL") == 1
    assert stores.facts.search_by_vector(alice.id, _vec(1), limit=5) == []
    assert [hit.fact.fact for hit in stores.facts.search_by_vector(bob.id, _vec(5), limit=5)] \
        == ["Lives in Lyon"]
    with pytest.raises(NotFound):
        stores.users.get(alice.id)


def test_deleting_a_service_account_deletes_its_end_users_with_all_their_data(stores, two_users):
    *_, bob, bob_chunks = two_users
    front_end = stores.users.add("webui", kind="service")[0]
    carol = stores.users.end_user(front_end.id, "carol-42", "Carol")
    carol_chunks = _fill(stores, carol, 11)
    before = _footprint(stores.db, carol.id, carol_chunks)
    bob_before = _footprint(stores.db, bob.id, bob_chunks)

    stores.accounts.delete(front_end.id)

    assert _footprint(stores.db, carol.id, carol_chunks) == dict.fromkeys(before, 0)
    assert _footprint(stores.db, bob.id, bob_chunks) == bob_before
    assert stores.facts.search_by_vector(carol.id, _vec(11), limit=5) == []
    with pytest.raises(NotFound):
        stores.users.get(front_end.id)


def test_deleting_an_unknown_user_is_not_found_and_changes_nothing(stores, two_users):
    alice, alice_chunks, *_ = two_users
    before = _footprint(stores.db, alice.id, alice_chunks)
    with pytest.raises(NotFound):
        stores.accounts.delete("no-such-user")
    assert _footprint(stores.db, alice.id, alice_chunks) == before


def test_export_ids_are_the_users_own_oldest_first(stores, two_users):
    alice, _, bob, _ = two_users
    second = _seed.conversation(stores.db, alice.id, title="later")
    ids = stores.accounts.conversation_ids(alice.id)
    assert len(ids) == 2 and ids[-1] == second
    assert set(ids).isdisjoint(stores.accounts.conversation_ids(bob.id))
    own = stores.accounts.knowledge_ids(alice.id)
    assert [stores.knowledge.read(entry).title for entry in own] == ["notes"]


def test_the_admin_page_counts_each_users_messages_and_live_facts(stores, two_users):
    alice, _, bob, _ = two_users
    stores.facts.create(bob.id, category="core", fact="Plays chess", embedding=_vec(3))
    found, total = stores.accounts.page(limit=10, offset=0)
    assert total == 2
    assert [(s.user.id, s.messages, s.facts) for s in found] == [(alice.id, 2, 1),
                                                                 (bob.id, 2, 2)]
    assert [s.user.id for s in stores.accounts.page(limit=1, offset=1)[0]] == [bob.id]
