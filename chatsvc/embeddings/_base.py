"""The interface every embedding provider implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors of `dim` floats.

    Providers apply the model's task prefixes themselves (`search_document: ` /
    `search_query: ` for nomic, `passage: ` / `query: ` for e5) and raise
    `EmbeddingUnavailable` when the service cannot be reached, fast once known down.
    """

    model: str
    dim: int

    def shares_cores(self, query: str) -> bool:
        """Whether embedding `query` takes every core of this process (the bundled model
        on a long query): a chat turn then embeds it after storing the question and
        ranks its keywords after it, not beside (they would compete for the cores)."""
        ...

    async def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def embed_query(self, text: str) -> list[float]: ...

    async def check(self) -> tuple[bool, str]:
        """(ok, detail) for /health and `chatsvc doctor`; cheap, never raises."""
        ...

    async def aclose(self) -> None: ...
