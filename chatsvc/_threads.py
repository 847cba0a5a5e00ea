"""Run blocking work (SQLite, in-process models) off the event loop."""

from __future__ import annotations

from collections.abc import Callable
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
