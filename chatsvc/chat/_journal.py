"""A streamed turn's events, numbered and kept in the database for re-attaching.

`add` numbers each event (its SSE id, from 1) and keeps it in memory; `watch`
appends what was added every TICK_SECONDS in one transaction, so a token never
costs a commit of its own, and then reads the stop marker (a read: no write lock
when nothing was added): a turn asked to stop by any worker or replica (POST
/api/conversations/{id}/stop) stops within a tick, even when no token comes.
`close` appends the rest, ending with an `error` event when the stream ended
without `done` or `error` (the client went away), so a re-attached client always
sees the end. Batches are appended one at a time, in order, and each runs to its
end even when the watch is cancelled: a reader never sees a later event before an
earlier one.

A turn answered without streaming records nothing (`record=False`) but still
watches for the stop marker.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from chatsvc._threads import in_thread_shielded, running_in_background
from chatsvc.chat._relay import STOPPED_BY_USER
from chatsvc.chat._turn import Turn
from store import StoreError
from store.contract import TurnEventStore
from store.turn_events import TERMINAL

log = logging.getLogger("chatsvc.chat")

TICK_SECONDS = 0.1
GONE = json.dumps({"code": "interrupted",
                   "message": "the stream ended before the answer (the client went away)"})


class Journal:
    def __init__(self, store: TurnEventStore, turn: Turn, *, record: bool = True) -> None:
        self.store = store
        self.turn = turn
        self.record = record
        self.seq = 0  # the last event's id
        self._pending: list[tuple[int, str, str]] = []
        self._ended = False  # a terminal event was added
        self._closed = False
        self._appending = anyio.Lock()

    def add(self, event: str, data: str) -> int:
        """Number the event (its SSE id) and keep it for the next append."""
        self.seq += 1
        if self.record:
            self._pending.append((self.seq, event, data))
        self._ended = self._ended or event in TERMINAL
        return self.seq

    async def watch(self) -> None:
        """Until closed: append what was added, and stop the turn when asked."""
        while not self._closed:
            await anyio.sleep(TICK_SECONDS)
            await self._append()

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[Journal]:
        """`watch` while the block runs, then `close`."""
        try:
            async with running_in_background(self.watch()):
                yield self
        finally:
            await self.close()

    async def close(self) -> None:
        """Append the rest (shielded: it runs while the request is torn down) and drop
        events retained past their time."""
        if self._closed:
            return
        self._closed = True
        if self.record and not self._ended:
            self.add("error", GONE)
        with anyio.CancelScope(shield=True):
            await self._append()
            if self.record:
                try:
                    await in_thread_shielded(self.store.forget_old)
                except StoreError as exc:  # the next turn's sweep does it
                    log.warning("could not drop old turn events: %s", exc)

    async def _append(self) -> None:
        async with self._appending:
            batch, self._pending = self._pending, []
            turn = self.turn
            try:
                stop = await in_thread_shielded(self.store.append, turn.conversation.id,
                                                turn.question.id, batch)
            except StoreError as exc:  # busy or down: keep them for the next tick
                log.warning("could not record %d event(s) of turn %s: %s", len(batch),
                            turn.question.id, exc)
                self._pending[:0] = batch
                return
        if stop:
            turn.stop(STOPPED_BY_USER)
