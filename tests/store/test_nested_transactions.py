"""Database.transaction nests as a savepoint: inner failures roll back only the inner part."""

import pytest

from store import StoreError


def _names(db):
    return [r["name"] for r in db.execute("SELECT name FROM users ORDER BY name")]


def _add(db, name):
    db.execute("INSERT INTO users(id, name, created_at) VALUES ($name, $name, 't')",
               {"name": name})


def test_inner_failure_rolls_back_only_the_savepoint(services):
    db = services.stores.db
    with db.transaction():
        _add(db, "outer")
        with pytest.raises(StoreError), db.transaction():
            _add(db, "inner")
            raise StoreError("inner fails")
        with db.transaction():
            _add(db, "kept")
    assert _names(db) == ["kept", "outer"]


def test_outer_failure_rolls_back_committed_inner_work(services):
    db = services.stores.db
    with pytest.raises(StoreError), db.transaction():
        with db.transaction():
            _add(db, "inner")
        _add(db, "outer")
        raise StoreError("outer fails")
    assert _names(db) == []
