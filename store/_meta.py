"""The meta table: schema version, embedding model and dimension, vector generations.

These run on a raw driver connection (migrations run before the store is open),
so the caller names its dialect.
"""

from __future__ import annotations

from typing import Any

from store.sql import SQLITE, render


def get(conn: Any, key: str, *, dialect: str = SQLITE) -> str | None:
    row = conn.execute(
        render("SELECT value FROM meta WHERE key = $key", dialect), {"key": key}
    ).fetchone()
    return None if row is None else row[0]


def put(conn: Any, key: str, value: str, *, dialect: str = SQLITE) -> None:
    conn.execute(
        render("INSERT INTO meta(key, value) VALUES ($key, $value) "
               "ON CONFLICT(key) DO UPDATE SET value = excluded.value", dialect),
        {"key": key, "value": value},
    )


def delete(conn: Any, key: str, *, dialect: str = SQLITE) -> None:
    conn.execute(render("DELETE FROM meta WHERE key = $key", dialect), {"key": key})


def recorded_model(conn: Any, *, dialect: str = SQLITE) -> tuple[str, int] | None:
    """(model, dimension) the vector tables were built with, or None before any."""
    model = get(conn, "embedding_model", dialect=dialect)
    dim = get(conn, "embedding_dim", dialect=dialect)
    return None if model is None or dim is None else (model, int(dim))


def record_model(conn: Any, model: str, dim: int, *, dialect: str = SQLITE) -> None:
    put(conn, "embedding_model", model, dialect=dialect)
    put(conn, "embedding_dim", str(dim), dialect=dialect)


def forget_model(conn: Any, *, dialect: str = SQLITE) -> None:
    delete(conn, "embedding_model", dialect=dialect)
    delete(conn, "embedding_dim", dialect=dialect)


def conflict_detail(recorded: tuple[str, int], model: str, dim: int) -> str:
    """The operator's message when vectors were built with another model."""
    old_model, old_dim = recorded
    return (f"CONFLICT: vectors were built with {old_model} ({old_dim}-d) but the configured "
            f"model is {model} ({dim}-d); run `chatsvc reindex`")
