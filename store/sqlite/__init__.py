"""SQLite + sqlite-vec backend (the embedded default)."""

from store.sqlite._db import SqliteDatabase

__all__ = ["SqliteDatabase"]
