"""`embed_beside`: a search's keyword work runs while its query is embedded elsewhere
(a service, or the bundled model on one core), and only then."""

from __future__ import annotations

import asyncio
import threading

import anyio
import httpx
import pytest

from chatsvc import EmbeddingUnavailable
from chatsvc.embeddings import OllamaEmbedder, _local, embed_beside
from tests.chatsvc.embeddings.ollama_wire import DIM, MODEL, FakeOllama, vector

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class HeldOllama(httpx.AsyncBaseTransport):
    """Ollama's recorded answers, each held back until `release` is set."""

    def __init__(self) -> None:
        self.fake = FakeOllama()
        self.asked = threading.Event()
        self.release = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.asked.set()
        await self.release.wait()
        return self.fake.handle(request)


def ollama(transport: httpx.AsyncBaseTransport) -> OllamaEmbedder:
    async def no_sleep(_seconds: float) -> None:
        return None

    return OllamaEmbedder("http://ollama.test:11434", model=MODEL, dim=DIM,
                          document_prefix="search_document: ", query_prefix="search_query: ",
                          transport=transport, sleep=no_sleep, cooldown=30.0)


async def test_the_work_runs_while_the_service_still_embeds_the_query():
    held = HeldOllama()
    client = ollama(held)
    loop = asyncio.get_running_loop()

    def keyword_work() -> str:
        seen = (held.asked.is_set(), held.release.is_set())
        loop.call_soon_threadsafe(held.release.set)  # the answer comes after the work
        return f"ranked while asked={seen[0]}, answered={seen[1]}"

    with anyio.fail_after(10):  # done one after the other, the answer would never come
        found, done = await embed_beside(client, "where is Ann?", keyword_work)
    assert done == "ranked while asked=True, answered=False"
    assert found == vector("search_query: where is Ann?")
    await client.aclose()


async def test_the_in_process_model_embeds_a_short_query_beside_the_work(
        local_embedder, monkeypatch):
    monkeypatch.setattr(_local, "_all_cores", lambda: 2)  # one core left for the work
    await local_embedder.embed_query("warm")  # loaded: the query's tokens can be counted
    found, done = await embed_beside(local_embedder, "where is Ann?", lambda: "ranked")
    assert done == "ranked"  # one core embedded it, another ranked
    assert found == await local_embedder.embed_query("where is Ann?")


async def test_the_in_process_model_embeds_a_long_query_without_the_work(local_embedder):
    question = " ".join(["where did Ann leave the blue bicycle after the ride home?"] * 5)
    await local_embedder.embed_query("warm")
    ran = []
    found, done = await embed_beside(local_embedder, question, lambda: ran.append(1))
    assert done is None and ran == []  # every core embedded it: the work waits
    assert found == await local_embedder.embed_query(question)


async def test_an_open_breaker_fails_the_search_before_any_work():
    fake = FakeOllama()
    fake.script = [httpx.RemoteProtocolError("EOF")] * 4  # retries used up: breaker opens
    client = ollama(fake.transport())
    with pytest.raises(EmbeddingUnavailable):
        await client.embed_query("first")
    ran = []
    with pytest.raises(EmbeddingUnavailable, match="failing fast"):
        await embed_beside(client, "where is Ann?", lambda: ran.append(1))
    assert ran == []
    await client.aclose()


async def test_failed_work_stops_the_embedding_and_is_raised():
    held = HeldOllama()
    client = ollama(held)

    def broken_work() -> None:
        raise RuntimeError("database is locked")

    with anyio.fail_after(10), pytest.raises(RuntimeError, match="database is locked"):
        await embed_beside(client, "where is Ann?", broken_work)
    assert held.asked.is_set() and not held.release.is_set()  # cancelled, never answered
    await client.aclose()
