"""Store tests run against both backends: `backend` is parametrised, and `open_db`,
`settings` and `services` follow it (PostgreSQL: a fresh schema per test)."""

import pytest

from chatsvc import Settings
from store import Users
from store.backend import open_database, stores_for
from tests._pg import drop_schema, empty_schema, new_schema


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def pg_store_url(pg_server_url):
    """One schema for the PostgreSQL store tests, emptied after each of them."""
    schema, url = new_schema(pg_server_url)
    yield url
    drop_schema(pg_server_url, schema)


@pytest.fixture
def database_url(request, backend, isolated_env, monkeypatch):
    """None for SQLite; else a PostgreSQL URL on an empty schema, also set as
    CHATSVC_DATABASE_URL so that `settings` and `services` use it."""
    if backend == "sqlite":
        yield None
        return
    url = request.getfixturevalue("pg_store_url")
    monkeypatch.setenv("CHATSVC_DATABASE_URL", url)
    yield url
    empty_schema(url)


@pytest.fixture
def open_db(database_url, tmp_path):
    """open_db(embed_model=, embed_dim=): this test's database; opening it again (with
    another model, say) reaches the same data, like reopening a file."""
    opened = []

    def open_(*, embed_model: str = "test-model", embed_dim: int = 8, **options):
        db = open_database(database_url=database_url, sqlite_path=tmp_path / "store.sqlite3",
                           embed_model=embed_model, embed_dim=embed_dim, **options)
        opened.append(db)
        return db

    yield open_
    for db in opened:
        db.close()


@pytest.fixture
def settings(database_url) -> Settings:
    return Settings.from_env()


@pytest.fixture
def db(open_db):
    return open_db()


@pytest.fixture
def stores(db):
    return stores_for(db)


@pytest.fixture
def users(db):
    return Users(db)
