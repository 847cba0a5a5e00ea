"""PostgreSQL for tests: one real server per session (`running_server`), one schema per
test database."""

from __future__ import annotations

from urllib.parse import quote

import psycopg

from store.clock import new_id
from store.pg._db import VECTOR_TABLES


def new_schema(server_url: str) -> tuple[str, str]:
    """A fresh empty schema and a URL whose connections use it (then `public`)."""
    schema = f"t_{new_id()[:16]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in server_url else "?"
    options = quote(f"-csearch_path={schema},public")
    return schema, f"{server_url}{joiner}options={options}"


def drop_schema(server_url: str, schema: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def empty_schema(url: str) -> None:
    """Back to a freshly migrated state, cheaper than a new schema: rows truncated,
    vector tables and their model record dropped (the next open recreates them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )]
        for name in set(tables) & set(VECTOR_TABLES):
            conn.execute(f"DROP TABLE {name}")
        if "meta" in tables:
            conn.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dim')")
        rows = [t for t in tables if t not in VECTOR_TABLES and t != "meta"]
        if rows:
            conn.execute(f"TRUNCATE {', '.join(rows)} RESTART IDENTITY CASCADE")
