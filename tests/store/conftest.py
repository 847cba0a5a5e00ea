import pytest

from store import Database, Users


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "store.sqlite3", embed_model="test-model", embed_dim=8)
    yield database
    database.close()


@pytest.fixture
def users(db):
    return Users(db)
