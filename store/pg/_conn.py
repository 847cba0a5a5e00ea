"""A psycopg 3 connection that speaks the sqlite3 API the domain stores are written in.

The stores' SQL is kept portable and written once: `?` and `:name` placeholders
are rewritten to psycopg's `%s` / `%(name)s` (string literals untouched), rows
answer to both index and column name like `sqlite3.Row`, a cursor's
`row_factory(cursor, row)` is honoured, and driver errors are raised as the
sqlite3 classes the stores catch. Parameters are bound client-side
(`ClientCursor`), so untyped values such as `:type IS NULL` work as in SQLite;
`bound_cursor()` binds server-side, for the vector queries (binary vectors).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

import psycopg
from psycopg import pq

from store._db import IntegrityError, OperationalError
from store.pg import _vector

_TOKENS = re.compile(r"'(?:[^']|'')*'|\?|(?<![:\w]):([A-Za-z_]\w*)|%")


@lru_cache(maxsize=1024)
def translate(sql: str, with_params: bool) -> str:
    """sqlite placeholders -> psycopg's; `%` doubled when psycopg will format."""
    if not with_params:
        return sql

    def swap(match: re.Match) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token.replace("%", "%%")
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return f"%({match.group(1)})s"

    return _TOKENS.sub(swap, sql)


class Row(tuple):
    """A result row addressable by position or column name (like sqlite3.Row)."""

    _index: dict[str, int]

    def __new__(cls, values, index: dict[str, int]):
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def _row_maker(cursor):
    names = [column.name for column in cursor.description or ()]
    index = {name: i for i, name in enumerate(names)}
    return lambda values: Row(values, index)


class Cursor:
    def __init__(self, raw: psycopg.ClientCursor) -> None:
        self._raw = raw
        self.row_factory = None  # sqlite3 style: f(cursor, tuple) -> object

    @property
    def rowcount(self) -> int:
        return self._raw.rowcount

    @property
    def lastrowid(self) -> int:
        """The serial key the last INSERT on this session generated (sqlite's rowid)."""
        return self._raw.connection.execute("SELECT lastval()").fetchone()[0]

    def execute(self, sql: str, params=None) -> Cursor:
        with _translated_errors():
            self._raw.execute(translate(sql, bool(params)), params or None)
        return self

    def executemany(self, sql: str, seq) -> Cursor:
        seq = list(seq)
        if seq:
            with _translated_errors():
                self._raw.executemany(translate(sql, True), seq)
        return self

    def _out(self, row):
        if row is None or self.row_factory is None:
            return row
        return self.row_factory(self, tuple(row))

    def fetchone(self):
        return self._out(self._raw.fetchone())

    def __iter__(self):
        return iter(self.fetchall())

    def fetchall(self) -> list:
        rows = self._raw.fetchall()
        return rows if self.row_factory is None else [self._out(r) for r in rows]


class Connection:
    """One psycopg connection in autocommit mode; transactions are explicit SQL."""

    def __init__(self, url: str) -> None:
        with _translated_errors():
            self.raw = psycopg.connect(
                url, autocommit=True, cursor_factory=psycopg.ClientCursor, row_factory=_row_maker
            )
        self._vectors_registered = False

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    def cursor(self) -> Cursor:
        return Cursor(self.raw.cursor())

    def bound_cursor(self) -> Cursor:
        """A cursor binding parameters server-side, so `Vector`s go in binary. Its SQL
        must give every parameter a type (no bare `? IS NULL`)."""
        if not self._vectors_registered:
            _vector.register(self.raw)
            self._vectors_registered = True
        return Cursor(psycopg.Cursor(self.raw))

    def execute(self, sql: str, params=None) -> Cursor:
        if sql.strip().upper() == "BEGIN":
            # A bare BEGIN (a multi-read snapshot) gets SQLite's one-snapshot semantics.
            sql = "BEGIN ISOLATION LEVEL REPEATABLE READ"
        return self.cursor().execute(sql, params)

    def executemany(self, sql: str, seq) -> Cursor:
        return self.cursor().executemany(sql, seq)

    def close(self) -> None:
        self.raw.close()


@contextmanager
def _translated_errors() -> Iterator[None]:
    """psycopg errors raised as the sqlite3 classes the stores already handle."""
    try:
        yield
    except psycopg.IntegrityError as exc:
        raise IntegrityError(str(exc)) from exc
    except psycopg.OperationalError as exc:
        raise OperationalError(str(exc)) from exc
