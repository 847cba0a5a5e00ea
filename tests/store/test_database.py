import threading

import pytest

from store import SqliteDatabase, StoreError, VectorUnavailable
from store._migrations import apply, available, current_version


def open_db(path, **options):
    return SqliteDatabase(path, embed_model=options.pop("model", "m"),
                          embed_dim=options.pop("dim", 4), **options)


def test_fresh_file_is_migrated_to_the_latest_version(tmp_path):
    db = open_db(tmp_path / "x.db")
    latest = available()[-1][0]
    assert current_version(db.connection()) == latest
    tables = {r[0] for r in db.connection().execute("SELECT name FROM sqlite_master")}
    assert {"users", "conversations", "messages", "facts", "fact_extractions"} <= tables
    assert db.vector_state.ok


def test_existing_file_keeps_its_data_and_is_not_migrated_twice(tmp_path):
    db = open_db(tmp_path / "x.db")
    db.connection().execute("INSERT INTO users(id, name, created_at) VALUES ('u','n','c')")
    db.close()
    again = open_db(tmp_path / "x.db")
    assert again.connection().execute("SELECT name FROM users").fetchall()[0][0] == "n"


def test_file_at_an_older_version_gets_only_the_missing_migrations(tmp_path):
    import sqlean

    conn = sqlean.connect(str(tmp_path / "x.db"), isolation_level=None)
    assert apply(conn, upto=1) == ["0001_init.sql"]
    conn.execute(
        "INSERT INTO users(id, name, token_id, token_hash, created_at) VALUES ('u','n','t','h','c')"
    )
    conn.close()
    db = open_db(tmp_path / "x.db")
    assert current_version(db.connection()) == available()[-1][0]
    assert db.connection().execute("SELECT name FROM users").fetchall()[0][0] == "n"


def test_tokens_issued_before_the_tokens_table_keep_working(tmp_path):
    import sqlean

    from store import Users
    from store.users import hash_secret

    conn = sqlean.connect(str(tmp_path / "x.db"), isolation_level=None)
    apply(conn, upto=19)
    for name, token_id, revoked in (("ann", "a1", None), ("ben", "b1", "2026-01-02")):
        conn.execute("INSERT INTO users(id, name, token_id, token_hash, created_at, revoked_at) "
                     "VALUES (?, ?, ?, ?, '2026-01-01', ?)",
                     (name, name, token_id, hash_secret("secret"), revoked))
    conn.execute("INSERT INTO conversations(id, user_id, created_at, updated_at) "
                 "VALUES ('c', 'ann', 'x', 'x')")
    conn.close()
    db = open_db(tmp_path / "x.db")
    users = Users(db)
    assert users.authenticate("a1.secret").name == "ann"
    assert users.authenticate("b1.secret") is None  # revoked stays revoked
    assert db.connection().execute("PRAGMA foreign_keys").fetchone()[0] == 1
    # The conversations still reference the rebuilt users table.
    db.connection().execute("DELETE FROM users WHERE id = 'ann'")
    assert db.connection().execute("SELECT count(*) FROM conversations").fetchone()[0] == 0


def test_a_migration_that_breaks_a_foreign_key_is_rolled_back(tmp_path, monkeypatch):
    import sqlean

    from store import _migrations

    conn = sqlean.connect(str(tmp_path / "x.db"), isolation_level=None)
    apply(conn, upto=1)
    broken = "INSERT INTO conversations(id, user_id, created_at, updated_at) " \
             "VALUES ('c', 'nobody', 'x', 'x');"
    monkeypatch.setattr(_migrations, "available", lambda package: [(2, "0002_x.sql", broken)])
    with pytest.raises(RuntimeError, match="foreign keys"):
        apply(conn)
    assert current_version(conn) == 1
    assert conn.execute("SELECT count(*) FROM conversations").fetchone()[0] == 0


def test_connections_are_per_thread_with_wal_and_foreign_keys(tmp_path):
    db = open_db(tmp_path / "x.db")
    seen = []
    thread = threading.Thread(target=lambda: seen.append(db.connection()))
    thread.start()
    thread.join()
    assert seen[0] is not db.connection()
    conn = db.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v0.1")


def test_missing_sqlite_vec_opens_the_store_without_vectors(tmp_path):
    db = open_db(tmp_path / "x.db", sqlite_vec_path=str(tmp_path / "nope"))
    assert not db.vector_state.ok
    assert "sqlite-vec could not be loaded" in db.vector_state.detail
    with pytest.raises(VectorUnavailable):
        db.require_vectors()
    assert db.connection().execute("SELECT count(*) FROM users").fetchone()[0] == 0


def test_dimension_change_is_a_conflict_until_reindex(tmp_path):
    open_db(tmp_path / "x.db", dim=4).close()
    db = open_db(tmp_path / "x.db", model="other", dim=8)
    assert not db.vector_state.ok
    assert "CONFLICT" in db.vector_state.detail and "chatsvc reindex" in db.vector_state.detail
    db.reset_vectors()
    assert db.vector_state.ok
    db.close()
    assert open_db(tmp_path / "x.db", model="other", dim=8).vector_state.ok


def test_transaction_rolls_back_on_error(tmp_path):
    db = open_db(tmp_path / "x.db")
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute(
            "INSERT INTO users(id, name, created_at) VALUES ('u','n','c')"
        )
        raise RuntimeError("boom")
    assert db.connection().execute("SELECT count(*) FROM users").fetchone()[0] == 0


def test_bulk_vectors_refuses_a_table_name_on_both_backends(db):
    with pytest.raises(StoreError, match="no vector table"), db.bulk_vectors(["facts"]):
        pass
    with db.bulk_vectors(["fact_vec", "chunk_vec"]):
        pass
