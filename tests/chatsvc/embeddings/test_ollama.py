"""The Ollama client against recorded Ollama responses (and a real closed port)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from chatsvc import EmbeddingError, EmbeddingUnavailable
from chatsvc.embeddings import OllamaEmbedder
from context.tokens import count_tokens
from tests.chatsvc.embeddings.ollama_wire import (
    DIM,
    MODEL,
    RUNNER_DIED,
    FakeOllama,
    embed_body,
    vector,
)

pytestmark = pytest.mark.anyio
FAST = 0.05  # "fails fast": no network, far below the 3 s connect / 30 s read timeouts


@pytest.fixture
def anyio_backend():
    return "asyncio"


def make(fake: FakeOllama, **options) -> tuple[OllamaEmbedder, list[float]]:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    options.setdefault("cooldown", 30.0)
    client = OllamaEmbedder(
        "http://ollama.test:11434", model=MODEL, dim=DIM,
        document_prefix="search_document: ", query_prefix="search_query: ",
        transport=fake.transport(), sleep=sleep, **options,
    )
    return client, sleeps


async def test_batch_embed_sends_one_request_with_document_prefixes():
    fake = FakeOllama()
    client, _ = make(fake)
    vectors = await client.embed_documents(["Ann lives in Lyon", "Ann writes Rust"])
    assert fake.sent("/api/embed") == [{
        "model": MODEL, "truncate": True,
        "input": ["search_document: Ann lives in Lyon", "search_document: Ann writes Rust"],
    }]
    assert vectors == [vector("search_document: Ann lives in Lyon"),
                       vector("search_document: Ann writes Rust")]
    query = await client.embed_query("where does Ann live?")
    assert fake.sent("/api/embed")[-1]["input"] == ["search_query: where does Ann live?"]
    assert len(query) == DIM
    await client.aclose()


async def test_old_server_falls_back_to_legacy_endpoint_for_good():
    fake = FakeOllama(legacy_only=True)
    client, _ = make(fake)
    vectors = await client.embed_documents(["one", "two"])
    assert [b["prompt"] for b in fake.sent("/api/embeddings")] == [
        "search_document: one", "search_document: two"]
    assert vectors[1] == vector("search_document: two")
    await client.embed_query("three")
    assert len(fake.sent("/api/embed")) == 1  # not asked again after the first 404
    assert fake.sent("/api/embeddings")[-1] == {"model": MODEL, "prompt": "search_query: three"}
    await client.aclose()


async def test_missing_model_is_a_clear_error_not_a_fallback_or_retry():
    fake = FakeOllama(pulled=False)
    client, _ = make(fake)
    with pytest.raises(EmbeddingError, match="try pulling it first") as caught:
        await client.embed_query("x")
    assert not isinstance(caught.value, EmbeddingUnavailable)
    assert len(fake.sent("/api/embed")) == 1 and fake.sent("/api/embeddings") == []
    assert not client.breaker.is_open
    ok, detail = await client.check()
    assert not ok and f"ollama pull {MODEL}" in detail
    await client.aclose()


async def test_long_input_is_capped_client_side_in_english_and_chinese():
    fake = FakeOllama()
    client, _ = make(fake, max_input_tokens=200)
    english = "The quick brown fox jumps over the lazy dog. " * 400
    chinese = "用户喜欢在周末去山里徒步，并且每天早上喝一杯咖啡。" * 300
    await client.embed_documents([english, chinese, "short"])
    sent = fake.sent("/api/embed")[0]["input"]
    for text in sent[:2]:
        assert text.startswith("search_document: ")
        assert 150 < count_tokens(text) <= 200
        assert "\ufffd" not in text
    assert sent[0][17:].startswith("The quick brown fox")
    assert sent[2] == "search_document: short"
    await client.aclose()


def _runner_died(_request):
    return httpx.Response(500, json=RUNNER_DIED)


async def test_5xx_and_eof_are_retried_with_backoff_then_succeed():
    fake = FakeOllama()
    fake.script = [_runner_died, httpx.RemoteProtocolError("Server disconnected"),
                   httpx.ReadTimeout("timed out")]
    client, sleeps = make(fake)
    assert len(await client.embed_query("hello")) == DIM
    assert len(fake.sent("/api/embed")) == 4
    assert sleeps == [0.5, 1.0, 2.0]
    assert not client.breaker.is_open
    await client.aclose()


async def test_4xx_is_not_retried():
    fake = FakeOllama()
    fake.script = [lambda _r: httpx.Response(400, json={"error": "invalid input type"})]
    client, sleeps = make(fake)
    with pytest.raises(EmbeddingError, match="HTTP 400 invalid input type"):
        await client.embed_query("hello")
    assert len(fake.sent("/api/embed")) == 1 and sleeps == []
    await client.aclose()


async def test_retries_used_up_open_the_breaker_which_then_fails_fast():
    fake = FakeOllama()
    fake.script = [httpx.RemoteProtocolError("EOF")] * 4
    client, sleeps = make(fake)
    with pytest.raises(EmbeddingUnavailable, match="failed 4 times"):
        await client.embed_query("hello")
    assert len(sleeps) == 3 and client.breaker.is_open
    started = time.perf_counter()
    with pytest.raises(EmbeddingUnavailable, match="failing fast"):
        await client.embed_query("again")
    # Typically ~50 µs; the bound leaves room for a loaded CI machine.
    assert time.perf_counter() - started < FAST
    assert len(fake.sent("/api/embed")) == 4  # the fast failure sent nothing
    await client.aclose()


async def test_background_probe_closes_the_breaker_when_ollama_is_back():
    fake = FakeOllama()
    fake.script = [_runner_died] * 4
    client, _ = make(fake, cooldown=0.05)
    with pytest.raises(EmbeddingUnavailable):
        await client.embed_documents(["x"])
    assert client.breaker.is_open
    for _ in range(250):
        if not client.breaker.is_open:
            break
        await asyncio.sleep(0.02)
    assert not client.breaker.is_open
    assert ("GET", "/", None) in fake.requests
    assert len(await client.embed_documents(["x"])) == 1
    await client.aclose()


async def test_wrong_dimension_is_reported():
    fake = FakeOllama()
    fake.script = [lambda r: httpx.Response(200, json=embed_body(["a"], dim=384))]
    client, _ = make(fake)
    with pytest.raises(EmbeddingError, match="384-d vectors but 768-d"):
        await client.embed_query("a")
    await client.aclose()


async def test_health_probe_reports_a_running_server():
    client, _ = make(FakeOllama())
    ok, detail = await client.check()
    assert ok and MODEL in detail
    await client.aclose()


async def test_ollama_down_is_learnt_in_milliseconds():
    """A real refused connection (nothing listens on port 9)."""
    client = OllamaEmbedder("http://127.0.0.1:9", model=MODEL, dim=DIM, cooldown=30)
    started = time.perf_counter()
    with pytest.raises(EmbeddingUnavailable, match="unreachable"):
        await client.embed_query("hello")
    first = time.perf_counter() - started
    started = time.perf_counter()
    with pytest.raises(EmbeddingUnavailable, match="failing fast"):
        await client.embed_query("hello")
    assert time.perf_counter() - started < FAST and first < 2.0
    ok, detail = await client.check()
    assert not ok and "unreachable" in detail
    await client.aclose()


class _DroppingOllama(BaseHTTPRequestHandler):
    """A real loopback server: the first `drops` requests get EOF (the connection is
    closed with no response, as when Ollama's runner dies), then recorded answers."""

    drops = 0
    seen: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        if len(type(self).seen) <= type(self).drops:
            self.close_connection = True
            return
        payload = json.dumps(embed_body(body["input"])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def dropping_server():
    _DroppingOllama.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DroppingOllama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _DroppingOllama
    server.shutdown()
    server.server_close()


async def test_real_eof_from_a_loopback_server_is_retried(dropping_server):
    url, handler = dropping_server
    handler.drops = 2
    client = OllamaEmbedder(url, model=MODEL, dim=DIM, backoff=0.01,
                            document_prefix="search_document: ")
    vectors = await client.embed_documents(["a", "b"])
    assert len(handler.seen) == 3 and len(vectors) == 2
    assert handler.seen[-1]["input"] == ["search_document: a", "search_document: b"]
    handler.drops = 10
    with pytest.raises(EmbeddingUnavailable, match="failed 4 times"):
        await client.embed_query("c")
    assert len(handler.seen) == 7 and client.breaker.is_open
    await client.aclose()
