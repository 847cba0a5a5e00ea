"""The meta table: schema version, embedding model and dimension."""

from __future__ import annotations


def get(conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def put(conn, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def delete(conn, key: str) -> None:
    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
