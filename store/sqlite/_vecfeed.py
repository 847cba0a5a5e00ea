"""The vector change feed, and the in-memory indexes that follow it (SQLite).

Every vector write records (table, row id, owner) in `vec_changes` inside the writing
transaction (store/sqlite/_vectors.py); `seq` grows in commit order, SQLite having one
writer at a time. A `Followed` index keeps the `seq` it has applied (its watermark):
before a search it reads the feed's top, and when any process (this one included) has
written since, it reads the ids changed after its watermark and their current rows (a
row gone is a delete): never the whole table. A rolled-back write leaves no change
behind, so there is nothing to undo. A reindex changes the epoch: the next search loads
everything again.

Cold start: a large index is saved as a snapshot file beside the database
(`<database>-vectors/`, numpy arrays (store/sqlite/_snapshot.py) plus a header with its
watermark, model, dimension, epoch and the row id of the change at its watermark)
whenever it is loaded in full or rebuilt; a new process loads the file and applies the
changes after its watermark. A file that is unreadable, of another model, dimension or
epoch, older than the pruned part of the feed, or whose watermark change is not the
feed's (a database restored from a backup) is ignored: the index is loaded from the
tables and saved again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from store import _meta
from store.contract import Database
from store.sqlite import _snapshot
from store.sqlite._schema import EPOCH_KEY
from store.sqlite._vecindex import Index, Row, View

log = logging.getLogger("chatsvc.store")

LOG_KEEP = 200_000  # changes kept; an index whose watermark is older loads in full
PRUNE_EVERY = 4096  # prune when seq crosses a multiple of this
PERSIST_MIN_ROWS = 5000  # smaller indexes load from the tables fast enough
FLOOR_KEY = "vec_changes_floor"  # the highest seq pruned
FORMAT = 2  # of the snapshot file (1: an .npz)


@dataclass(frozen=True)
class Position:
    """Where the feed stands: the vector epoch, the last seq, the last pruned seq."""

    epoch: str
    top: int
    floor: int


def position(db: Database) -> Position:
    row = db.execute(
        "SELECT (SELECT value FROM meta WHERE key = $epoch) AS epoch, "
        "(SELECT coalesce(max(seq), 0) FROM vec_changes) AS top, "
        "(SELECT value FROM meta WHERE key = $floor) AS floor",
        {"epoch": EPOCH_KEY, "floor": FLOOR_KEY}).fetchone()
    return Position(str(row["epoch"]), row["top"], int(row["floor"] or 0))


def record(db: Database, table: str, owner: str | None, ids: list[str]) -> None:
    """Add changes to the feed (inside the caller's transaction); prune now and then."""
    if not ids:
        return
    db.executemany("INSERT INTO vec_changes(tbl, row_id, user_id) VALUES ($t, $id, $o)",
                   [{"t": table, "id": row_id, "o": owner or ""} for row_id in ids])
    top = db.scalar("SELECT max(seq) FROM vec_changes")
    if top > LOG_KEEP and top // PRUNE_EVERY != (top - len(ids)) // PRUNE_EVERY:
        floor = top - LOG_KEEP
        db.execute("DELETE FROM vec_changes WHERE seq <= $floor", {"floor": floor})
        _meta.put(db.connection(), FLOOR_KEY, str(floor))


class Source(Protocol):
    """One index's rows in the database."""

    def rows(self, ids: list[str] | None) -> list[Row]:
        """The current rows of these ids (None: every row); a deleted id has none."""

    def changed(self, since: int, top: int) -> list[str]:
        """The ids changed after seq `since`, up to `top`."""

    def mark(self, seq: int) -> str:
        """The row id the feed holds at `seq` ('' for none)."""


class Followed:
    """One in-memory index kept current from the change feed, safe across threads:
    catching up and taking a view happen under a lock, searches run on the view."""

    def __init__(self, index: Index, source: Source, *, file: Path | None,
                 identity: dict) -> None:
        self.index = index
        self.source = source
        self.file = file
        self.identity = {"format": FORMAT, **identity}
        self.rows_read = 0  # rows read from the database: what a refresh cost
        self._at: tuple[str, int] | None = None  # (epoch, watermark)
        self._lock = threading.Lock()

    def view(self, position: Callable[[], Position]) -> View:
        """A view caught up with the feed. `position` is read under the lock: a position
        read before another thread caught up would look like the feed going back."""
        with self._lock:
            at = position()
            # Past the feed's top: the database went back (a backup restored in place).
            behind = (self._at is None or self._at[0] != at.epoch
                      or not at.floor <= self._at[1] <= at.top)
            if behind and not self._restore(at):
                self._load(at)
            if self._at[1] < at.top:
                self._follow(at)
            if self.index.stale():
                self.index.rebuild()
                self._save()
            return self.index.view()

    def _follow(self, at: Position) -> None:
        ids = self.source.changed(self._at[1], at.top)
        if len(ids) > max(1000, self.index.size // 4):
            self._load(at)  # reading the table is cheaper than that many lookups
            return
        rows = self.source.rows(ids) if ids else []
        self.rows_read += len(rows)
        self.index.remove(ids)
        self.index.add(rows)
        self._at = (at.epoch, at.top)

    def _load(self, at: Position) -> None:
        # Rows read after `at`: they may hold changes after it, which applying those
        # changes again later leaves as they are.
        rows = self.source.rows(None)
        self.rows_read += len(rows)
        self.index.load(rows)
        self._at = (at.epoch, at.top)
        self._save()

    # -- the snapshot file -------------------------------------------------------------

    def _save(self) -> None:
        if self.file is None or self.index.size < PERSIST_MIN_ROWS:
            return
        header = json.dumps({**self.identity, "epoch": self._at[0], "watermark": self._at[1],
                             "mark": self.source.mark(self._at[1])})
        partial = self.file.with_name(f"{self.file.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            self.file.parent.mkdir(exist_ok=True)
            with open(partial, "wb") as out:
                _snapshot.write(out, {"header": np.array(header), **self.index.arrays()})
            partial.replace(self.file)  # atomic: readers see the old file or the new one
            self.file.with_suffix(".npz").unlink(missing_ok=True)  # FORMAT 1's, if any
        except OSError as exc:
            partial.unlink(missing_ok=True)
            log.warning("could not save the vector snapshot %s: %s", self.file, exc)

    def _restore(self, at: Position) -> bool:
        """Load the snapshot file if it is this index's at a watermark the feed still
        covers; False (and the file left for `_load` to replace) otherwise."""
        if self.file is None or not self.file.exists():
            return False
        try:
            with open(self.file, "rb") as fp:
                saved = _snapshot.Snapshot(fp)
                header = json.loads(str(saved["header"]))
                watermark, mark = header.pop("watermark"), header.pop("mark")
                # The change at the watermark must be the one the file saw: a database
                # restored from a backup may have reached that seq with other changes.
                if (header != {**self.identity, "epoch": at.epoch}
                        or not at.floor <= watermark <= at.top
                        or mark != self.source.mark(watermark)):
                    log.info("vector snapshot %s is stale: rebuilding it", self.file)
                    return False
                self.index.restore(saved)
        except (OSError, ValueError, KeyError, EOFError) as exc:
            log.warning("vector snapshot %s unreadable (%s): rebuilding it", self.file, exc)
            return False
        self._at = (at.epoch, watermark)
        return True

    def discard(self) -> None:
        """Forget the snapshot file (the user is gone)."""
        if self.file is not None:
            self.file.unlink(missing_ok=True)


def snapshot_file(database: Path, table: str, owner: str | None) -> Path | None:
    """Where an index's snapshot lives (None for an in-memory database)."""
    if str(database) == ":memory:":
        return None
    name = table if owner is None else f"{table}-{hashlib.sha256(owner.encode()).hexdigest()[:24]}"
    return database.with_name(database.name + "-vectors") / f"{name}.arrays"
