"""Resumable turns: run by the server rather than by their request, so they outlive it.

A resumable answer (POST /api/chat with `"resumable": true`) keeps generating and is
saved when its client goes away, so it cannot be a task of the request. `Detached`
runs such turns in one task group open for the app's lifespan; at shutdown each is
stopped (its partial answer stored `interrupted`, code `shutdown`) and awaited
before the services close.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

log = logging.getLogger("chatsvc.chat")


class Detached:
    def __init__(self) -> None:
        self._group: TaskGroup | None = None
        self._stops: dict[int, Callable[[], None]] = {}  # running turn -> its stop

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Detached]:
        async with anyio.create_task_group() as self._group:
            try:
                yield self
            finally:
                for stop in list(self._stops.values()):
                    stop()

    def start(self, run: Callable[[], Awaitable[None]], stop: Callable[[], None]) -> None:
        """Run `run()` until it ends; `stop()` asks it to end early (shutdown)."""
        if self._group is None:
            raise RuntimeError("detached turns run only while the app runs")
        key = id(run)
        self._stops[key] = stop

        async def tracked() -> None:
            try:
                await run()
            except Exception:  # one turn's failure must not end the others (or the app)
                log.exception("a resumable turn failed")
            finally:
                del self._stops[key]

        self._group.start_soon(tracked)
