"""Per-user job locks held across awaits (the database's advisory lock; see store/pg)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from chatsvc._threads import in_thread, in_thread_shielded
from store import Database


@asynccontextmanager
async def job_lock(db: Database, job: str, key: str, *, wait: bool) -> AsyncIterator[bool]:
    """`db.job_lock` entered and left in worker threads; yields whether it is held."""
    manager = db.job_lock(job, key, wait=wait)
    held = await in_thread(manager.__enter__)
    try:
        yield held
    finally:
        await in_thread_shielded(manager.__exit__, None, None, None)
