"""The bundled in-process model: a short query on one core, leaving the others free."""

from __future__ import annotations

import pytest

from chatsvc.embeddings import LocalEmbedder, _local

pytestmark = pytest.mark.anyio

SHORT = "where is Ann?"
LONG = " ".join(["where did Ann leave the blue bicycle after the long ride home?"] * 5)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def loaded(local_embedder) -> LocalEmbedder:
    await local_embedder.embed_query("warm")  # loaded: its tokens can be counted
    return local_embedder


@pytest.fixture
def thread_counts(monkeypatch) -> list[int]:
    """The OpenMP thread counts the engine's calls are given, in order."""
    counts: list[int] = []
    monkeypatch.setattr(_local, "_omp_set_num_threads", lambda: counts.append)
    return counts


async def test_a_short_query_is_embedded_on_one_core_and_leaves_the_others(
        loaded, thread_counts, monkeypatch):
    monkeypatch.setattr(_local, "_all_cores", lambda: 2)
    assert not loaded.shares_cores(SHORT) and loaded.shares_cores(LONG)
    await loaded.embed_query(SHORT)
    await loaded.embed_query(LONG)
    await loaded.embed_documents([SHORT])  # documents: the indexer's, on every core
    assert thread_counts == [1, 2, 2]


async def test_one_core_gives_the_vector_every_core_gives(loaded, monkeypatch):
    on_one = await loaded.embed_query(SHORT)
    monkeypatch.setattr(_local, "ONE_CORE_TOKENS", 0)  # every query on every core
    assert await loaded.embed_query(SHORT) == on_one


async def test_every_query_shares_the_cores_before_the_model_loads_or_on_one_core(
        loaded, monkeypatch):
    assert LocalEmbedder().shares_cores(SHORT)  # not loaded: its tokens are unknown
    monkeypatch.setattr(_local, "_all_cores", lambda: 1)
    assert loaded.shares_cores(SHORT)
