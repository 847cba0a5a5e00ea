"""Database.transaction nests as a savepoint: inner failures roll back only the inner part."""

import pytest

from store import StoreError


def _names(db):
    return [r[0] for r in db.connection().execute("SELECT name FROM users ORDER BY name")]


def _add(conn, name):
    conn.execute("INSERT INTO users(id, name, token_id, token_hash, created_at) "
                 "VALUES (?, ?, ?, 'h', 't')", (name, name, name))


def test_inner_failure_rolls_back_only_the_savepoint(services):
    db = services.stores.db
    with db.transaction() as conn:
        _add(conn, "outer")
        with pytest.raises(StoreError), db.transaction() as inner:
            _add(inner, "inner")
            raise StoreError("inner fails")
        with db.transaction() as inner:
            _add(inner, "kept")
    assert _names(db) == ["kept", "outer"]


def test_outer_failure_rolls_back_committed_inner_work(services):
    db = services.stores.db
    with pytest.raises(StoreError), db.transaction() as conn:
        with db.transaction() as inner:
            _add(inner, "inner")
        _add(conn, "outer")
        raise StoreError("outer fails")
    assert _names(db) == []
