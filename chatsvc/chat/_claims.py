"""The claims this process's turns hold on their conversations, kept as leases.

A turn's claim (store.chats) names this process (`owner`) and lapses
`lease_seconds` after it was last renewed; while the app runs, every third of that
one statement renews all of this process's claims. So a process that dies frees its
conversations a lease later at most, for every worker and replica, where it once
took the whole hold (~220 s: a live turn's every deadline). At start-up the process
frees at once what the dead processes of its own data dir held (chatsvc._instance
tells them from live siblings, which keep theirs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from chatsvc._instance import departed, presence, process_owner
from chatsvc._threads import in_thread, running_in_background
from store import ChatStore, StoreError, TurnLease

log = logging.getLogger("chatsvc.chat")


class TurnClaims:
    def __init__(self, chats: ChatStore, data_dir: Path, *, lease_seconds: float) -> None:
        self.chats = chats
        self.data_dir = data_dir
        # Named in the process that serves (a `--workers` child, not its parent).
        self.lease = TurnLease(process_owner(), lease_seconds)

    @contextlib.asynccontextmanager
    async def kept(self) -> AsyncIterator[None]:
        """Renew this process's claims while the context is open (the app's
        lifespan), after freeing those of the data dir's dead processes."""
        with presence(self.data_dir, self.lease.owner):
            await self._free_departed()
            async with running_in_background(self._renew_forever()):
                yield

    async def _free_departed(self) -> None:
        for owner, mark in (await in_thread(departed, self.data_dir)).items():
            try:
                freed = await in_thread(self.chats.free_turns_of, owner)
            except StoreError as exc:  # its claims lapse on their own; the next start retries
                log.warning("could not free the conversations of dead process %s: %s",
                            owner, exc)
                continue
            mark.unlink(missing_ok=True)
            if freed:
                log.warning("freed %d conversation(s) whose turn died with process %s",
                            freed, owner)

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.lease.seconds / 3)
            try:
                await in_thread(self.chats.renew_turns, self.lease.owner,
                                lease_seconds=self.lease.seconds)
            except StoreError as exc:  # busy or unreachable: a later renewal may get through
                log.warning("renewal of turn leases put off: %s", exc)
