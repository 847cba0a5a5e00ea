"""The priority lane with the real in-process model: a query does not queue behind bulk work."""

from __future__ import annotations

import os
import time

import anyio
import numpy as np
import pytest

from chatsvc.embeddings import BulkLocalEmbedder, PriorityEmbedder

CHUNK = ("The deploy runbook says: drain the node, roll the service, watch the queue. " * 11)[:800]
BULK = [f"{i} {CHUNK}" for i in range(12)]


async def _query_wait_during_bulk(lanes: PriorityEmbedder) -> tuple[float, float]:
    """(seconds the bulk work took, seconds a query took that started during it)."""
    waited = 0.0
    async with anyio.create_task_group() as tasks:
        started = time.perf_counter()
        tasks.start_soon(lanes.embed_bulk, BULK)
        await anyio.sleep(0.3)  # the bulk work is under way
        begun = time.perf_counter()
        await lanes.embed_query("how do I deploy?")
        waited = time.perf_counter() - begun
    return time.perf_counter() - started, waited


@pytest.mark.slow
@pytest.mark.parametrize("own_bulk_engine", [True, False])
def test_a_query_waits_for_at_most_one_small_bulk_batch(local_embedder, own_bulk_engine):
    bulk = BulkLocalEmbedder() if own_bulk_engine else None
    lanes = PriorityEmbedder(local_embedder, bulk=bulk, batch=2)
    bulk_seconds, waited = anyio.run(_query_wait_during_bulk, lanes)
    # Without the lane the query waits for the whole bulk call (see the next test).
    assert waited < bulk_seconds / 3, (waited, bulk_seconds)
    anyio.run(lanes.aclose)


@pytest.mark.slow
def test_without_priority_a_query_queues_behind_the_bulk_work(local_embedder):
    lanes = PriorityEmbedder(local_embedder, priority=False)
    bulk_seconds, waited = anyio.run(_query_wait_during_bulk, lanes)
    assert waited > bulk_seconds / 2, (waited, bulk_seconds)


def test_bulk_vectors_equal_interactive_ones(local_embedder):
    lanes = PriorityEmbedder(local_embedder, bulk=BulkLocalEmbedder(), batch=2)
    texts = ["alpha", "beta", "gamma"]
    bulk = anyio.run(lanes.embed_bulk, texts)
    direct = anyio.run(local_embedder.embed_documents, texts)
    assert np.allclose(bulk, direct, atol=1e-5)
    assert np.allclose(anyio.run(lanes.bulk.embed_documents, texts), direct, atol=1e-5)


def _lowest_priority_threads() -> set[str]:
    """This process's threads at nice 19 (Linux /proc)."""
    niced = set()
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[16] == "19":
                niced.add(tid)
    return niced


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")
def test_the_bulk_engine_uses_every_core_all_at_the_lowest_priority():
    """Its OpenMP threads inherit the bulk worker's niceness: with one per core, chat turns
    still get the cores first (evals/EXPERIMENTS.md, the indexing_bench runs)."""
    before = _lowest_priority_threads()
    bulk = BulkLocalEmbedder()
    anyio.run(bulk.embed_documents, BULK[:4])
    try:
        assert len(_lowest_priority_threads() - before) == len(os.sched_getaffinity(0))
    finally:
        anyio.run(bulk.aclose)
