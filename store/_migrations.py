"""Numbered migrations: `migrations/NNNN_name.sql` (SQLite) and `pg/migrations/`
(PostgreSQL), applied in order on open.

Each file runs in its own transaction together with the bump of
`meta.schema_version`, so a failed migration leaves the file at the previous
version. Files are never edited once released; changes get a new number.

SQLite runs them with foreign keys off and checks every reference before each
commit: SQLite's own procedure for rebuilding a table (dropping one with foreign
keys on would cascade into every table that references it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources

from store import _meta
from store.sql import SQLITE

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def available(package: str = "store.migrations") -> list[tuple[int, str, str]]:
    """(version, file name, SQL) for every migration shipped in `package`, in order."""
    found = []
    for entry in resources.files(package).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in {package}: {versions}")
    return found


def current_version(conn, *, dialect: str = SQLITE) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    value = _meta.get(conn, "schema_version", dialect=dialect)
    return int(value) if value is not None else 0


def _run_statements(conn, sql: str) -> None:
    for statement in _statements(sql):
        conn.execute(statement)
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"the migration breaks foreign keys: {[tuple(r) for r in broken]}")


def apply(
    conn, *, upto: int | None = None, package: str = "store.migrations",
    begin: str = "BEGIN IMMEDIATE", run: Callable[[object, str], None] = _run_statements,
    dialect: str = SQLITE,
) -> list[str]:
    """Apply pending migrations (up to version `upto`); return the names of those applied.

    `package`, `begin` (a write transaction), `run` (a whole file's SQL) and `dialect`
    are the backend's: SQLite by default; PostgreSQL passes its own.
    """
    if dialect != SQLITE:
        return _apply(conn, upto, package, begin, run, dialect)
    # PRAGMA foreign_keys is ignored inside a transaction: set it around them.
    enforced = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        return _apply(conn, upto, package, begin, run, dialect)
    finally:
        conn.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")


def _apply(conn, upto, package, begin, run, dialect) -> list[str]:
    applied = []
    version = current_version(conn, dialect=dialect)
    for number, name, sql in available(package):
        if number <= version or (upto is not None and number > upto):
            continue
        conn.execute(begin)
        try:
            # Another process may have migrated while we waited for the lock.
            if current_version(conn, dialect=dialect) >= number:
                conn.execute("ROLLBACK")
                continue
            run(conn, sql)
            _meta.put(conn, "schema_version", str(number), dialect=dialect)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        applied.append(name)
    return applied


def _statements(sql: str) -> list[str]:
    # executescript() would commit our transaction; split on statement ends instead.
    import sqlean

    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlean.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
