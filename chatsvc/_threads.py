"""Run blocking work (SQLite, in-process models) off the event loop, and background
tasks for as long as a context is open."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from functools import partial
from typing import ParamSpec, TypeVar

import anyio
import anyio.to_thread

P = ParamSpec("P")
T = TypeVar("T")


async def in_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


async def in_thread_shielded(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Like `in_thread`, but a cancelled caller (client gone) still lets the write finish."""
    with anyio.CancelScope(shield=True):
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


@contextlib.asynccontextmanager
async def running_in_background(work: Coroutine) -> AsyncIterator[None]:
    """`work` as a task while the context is open (the app's lifespan), stopped at exit
    through an anyio cancel scope: unlike a bare `task.cancel()`, that waits for a
    worker thread `work` is waiting on, so none is left writing to a database the
    shutdown is about to close (a closed SQLite connection in use can crash)."""
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            await work

    task = asyncio.create_task(run())
    try:
        yield
    finally:
        scope.cancel()
        await task
