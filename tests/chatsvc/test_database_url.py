"""CHATSVC_DATABASE_URL: unset keeps SQLite, a postgresql:// URL selects PostgreSQL."""

import pytest

from chatsvc import Services, Settings, SettingsError


def test_unset_means_sqlite_in_the_data_dir(settings, local_embedder):
    assert settings.database_url is None
    services = Services.open(settings, embedder=local_embedder)
    try:
        assert services.stores.db.dialect == "sqlite"
        assert services.stores.db.path == settings.database_path
    finally:
        services.stores.db.close()


def test_a_non_postgresql_url_is_refused_without_echoing_it():
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"CHATSVC_DATABASE_URL": "mysql://u:hunter2@db/x"})
    assert "CHATSVC_DATABASE_URL" in str(error.value)
    assert "hunter2" not in str(error.value)


def test_the_url_stays_out_of_the_settings_repr():
    settings = Settings.from_env({"CHATSVC_DATABASE_URL": "postgresql://u:hunter2@db/x"})
    assert settings.database_url == "postgresql://u:hunter2@db/x"
    assert "hunter2" not in repr(settings)


def test_a_postgresql_url_selects_postgresql(pg_server_url, monkeypatch, local_embedder):
    monkeypatch.setenv("CHATSVC_DATABASE_URL", pg_server_url)
    services = Services.open(Settings.from_env(), embedder=local_embedder)
    try:
        assert services.stores.db.dialect == "postgresql"
        assert services.stores.db.vector_state.detail.startswith("pgvector")
        assert type(services.stores.facts._vectors).__name__ == "PgVectors"
    finally:
        services.stores.db.close()
