"""The background indexer: queued jobs first, then every derived vector index.

One pass runs the unfinished jobs, oldest first, and then backfills every store
in `chatsvc.reindex.REINDEXABLE` (facts, memory, knowledge, messages and whatever
registers there later), all through the bulk lane of the embedder so chat turns
go first. A pass runs when something was written (`wake`), every `interval`
seconds, and, while the embedder is down, every `RETRY_SECONDS` after a health
check of it (cheap; jobs stay as they are).

Across processes (`--workers`, replicas) each job runs once: a pass claims one job
at a time (a lease in its row, `lease_seconds`, renewed every third of that while
it runs), so several processes work on different jobs; a job whose process died
is claimed again once its lease ran out and resumes from its saved progress. The
backfill is a periodic sweep with no row to lease: one process sweeps at a time
under the database's job lock (an flock or advisory lock, which the OS or the
server drops with a dead holder), others skip theirs; what it left undone is
found again by the next sweep anywhere (rows still without a vector).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from chatsvc._errors import EmbeddingError, EmbeddingUnavailable
from chatsvc._instance import process_owner
from chatsvc._joblock import job_lock
from chatsvc._threads import in_thread, running_in_background
from chatsvc.embeddings import PriorityEmbedder
from chatsvc.indexing._job import EmbedderDown, Ingest, Work, run_job
from chatsvc.reindex import REINDEXABLE, backfill
from store import DatabaseBusy, Job, Payload, VectorUnavailable
from store.backend import Stores
from store.clock import iso, utc_now
from store.contract import Reindexable

log = logging.getLogger("chatsvc.indexing")

RETRY_SECONDS = 2.0  # while the embedder is down (its breaker makes a retry cost µs)
KEEP_FINISHED = timedelta(days=7)  # how long a client can still read a finished job
LOCK = ("indexer", "backfill")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Indexer:
    def __init__(self, stores: Stores, embedder: PriorityEmbedder, *, interval: float,
                 lease_seconds: float = 30.0,
                 registry: dict[str, Callable[[Stores], Reindexable]] = REINDEXABLE) -> None:
        self.stores = stores
        self.embedder = embedder
        self.interval = interval
        self.lease_seconds = lease_seconds
        # Named in the process that runs the passes (a `--workers` child, not its parent).
        self.owner = process_owner()
        self.registry = registry
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._down = False  # the last pass stopped because the embedder was down
        self._passing = False
        self.ingest: Ingest | None = None  # upload jobs' first half (chatsvc.uploads)

    def wake(self) -> None:
        """Something was written that needs vectors: run a pass soon. Cheap, and safe
        from any thread or event loop; a no-op while the indexer is not running."""
        loop, event = self._loop, self._event
        if loop is None or event is None or loop.is_closed():
            return
        if _running_loop() is loop:
            event.set()  # at once: `busy` is true from here on
        else:
            loop.call_soon_threadsafe(event.set)

    @property
    def busy(self) -> bool:
        """Whether a pass runs or was asked for (tests wait for the database to settle)."""
        return self._passing or (self._event is not None and self._event.is_set())

    async def enqueue(self, user_id: str, *, kind: str, entry_id: str | None,
                      payload: Payload | None = None) -> Job:
        """A new queued job (with its input), and a pass soon to run it."""
        job = await in_thread(self.stores.jobs.create, user_id, kind=kind, entry_id=entry_id,
                              payload=payload)
        self.wake()
        return job

    # -- passes ------------------------------------------------------------------------

    async def run_once(self) -> bool:
        """One pass over jobs and indexes; False when the embedder was down."""
        if self._down and not (await self.embedder.check())[0]:
            return False  # still down: the waiting jobs keep their state and reason
        try:
            await self._jobs()
            async with job_lock(self.stores.db, *LOCK, wait=False) as held:
                if held:  # else another process sweeps; it will see our rows too
                    await self._backfill()
        except EmbedderDown as exc:
            if not self._down:
                log.warning("indexing waits for the embedding service: %s", exc)
            self._down = True
            return False
        if self._down:
            log.info("embedding service back: indexing resumed")
        self._down = False
        return True

    async def _jobs(self) -> None:
        await in_thread(self.stores.jobs.prune, finished_before=iso(utc_now() - KEEP_FINISHED))
        # New jobs may arrive during a pass: claim until none is left to claim.
        work = Work(self.stores.jobs.bound(self.owner), self.stores.knowledge,
                    self.embedder.embed_bulk, self.ingest)
        while job := await in_thread(self.stores.jobs.claim, self.owner,
                                     lease_seconds=self.lease_seconds):
            async with running_in_background(self._renew(job)):
                finished = await run_job(job, work)
            log.info("indexing job %s: %s (%d/%d)", job.id, finished.status,
                     finished.done, finished.total)

    async def _renew(self, job: Job) -> None:
        """Keep the job's lease while it runs; a renewal that fails (the lease ran out
        and another process took the job) stops here, and the job's next write raises
        LeaseLost in its runner."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                held = await in_thread(self.stores.jobs.renew, job.id, self.owner,
                                       lease_seconds=self.lease_seconds)
            except DatabaseBusy as exc:  # a later renewal may get through in time
                log.warning("lease renewal of job %s put off: %s", job.id, exc)
                continue
            if not held:
                log.warning("indexing job %s: lease lost to another process", job.id)
                return

    async def _backfill(self) -> None:
        if not self.stores.db.vector_state.ok:
            return  # nothing can be saved; /health says why
        for name, get_store in self.registry.items():
            try:
                embedded = await backfill(get_store(self.stores), self.embedder.bulk)
            except EmbeddingUnavailable as exc:
                raise EmbedderDown(str(exc)) from None
            except (EmbeddingError, VectorUnavailable, RuntimeError) as exc:
                log.error("backfill of %s failed: %s", name, exc)
                continue
            if embedded:
                log.info("backfill: embedded %d %s rows", embedded, name)

    # -- the loop ----------------------------------------------------------------------

    async def _run_forever(self, event: asyncio.Event) -> None:
        while True:
            self._passing = True
            try:
                up = await self.run_once()
            except DatabaseBusy as exc:  # another writer holds the lock: the next tick
                log.warning("indexing pass put off: %s", exc)
                up = True
            except Exception:
                log.exception("indexing pass failed")
                up = True
            finally:
                self._passing = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), self.interval if up else RETRY_SECONDS)
            event.clear()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the indexer while the context is open (the app's lifespan).

        One run at a time: two apps sharing one `Services` on two event loops would
        trade the wake-up event between loops; each app needs its own."""
        if self._loop is not None:
            raise RuntimeError("this indexer already runs in another app's lifespan: "
                               "open one Services per app")
        self._loop, self._event = asyncio.get_running_loop(), asyncio.Event()
        self._passing = True  # busy from the start: the first pass runs at once
        try:
            async with running_in_background(self._run_forever(self._event)):
                yield
        finally:
            self._loop = self._event = None
            self._passing = False
