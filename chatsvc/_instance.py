"""This process among those on its data dir: its name on the leases it holds, and a
mark that says whether it still runs.

A serving process (`serve`, each `--workers` child, each replica sharing the data
dir) keeps a file in <data dir>/processes/ that holds its name, flock'ed for as long
as it runs. The OS drops an flock with its holder however it died (SIGKILL, OOM,
power loss: a reboot starts with none), so a file whose lock another process can
take is the mark of a dead one, and a locked file the mark of a live sibling, pid
reuse and all. A process that starts looks for the dead (`departed`) to free what
they held. A process that died on another machine, or with another data dir, is
not found this way: its leases lapse on their own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from store.clock import new_id

try:
    import fcntl
except ImportError:  # Windows: no flock; every mark reads as alive
    fcntl = None

log = logging.getLogger("chatsvc")

MARKS = "processes"
SUFFIX = ".owner"


def process_owner() -> str:
    """This process's name on the leases it holds: host and pid say where it ran
    (logs, `chatsvc` operators), the random part keeps a reused pid apart."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"


@contextlib.contextmanager
def presence(data_dir: Path, owner: str) -> Iterator[None]:
    """Mark `owner` alive on `data_dir` while the context is open. The mark is locked
    before it gets its name, so a sibling never sees it unlocked."""
    marks = data_dir / MARKS
    mark = marks / f"{new_id()}{SUFFIX}"
    try:
        marks.mkdir(parents=True, exist_ok=True)
        partial = marks / f".{mark.name}"
        handle = partial.open("w+")
    except OSError as exc:  # a read-only data dir: the leases still lapse
        log.warning("cannot mark this process alive in %s (%s): a restart frees its "
                    "conversations only once their leases lapse", marks, exc)
        yield
        return
    with handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(owner)
        handle.flush()
        partial.replace(mark)
        try:
            yield
        finally:
            mark.unlink(missing_ok=True)


def departed(data_dir: Path) -> dict[str, Path]:
    """The owners of the dead processes' marks on `data_dir`, with their marks (to
    `unlink` once what they held is freed)."""
    found = {}
    for mark in sorted((data_dir / MARKS).glob(f"*{SUFFIX}")):
        owner = _owner_if_dead(mark)
        if owner:
            found[owner] = mark
    return found


def _owner_if_dead(mark: Path) -> str | None:
    if fcntl is None:
        return None
    try:
        with mark.open("r") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # held: a live process
            return handle.read().strip() or None
    except FileNotFoundError:  # another starting process freed it already
        return None
