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
    # The model computes on this process's cores (the bundled one), not in a service:
    # a chat turn then embeds its query after storing it, not beside (they would compete).
    in_process: bool

    async def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def embed_query(self, text: str) -> list[float]: ...

    async def check(self) -> tuple[bool, str]:
        """(ok, detail) for /health and `chatsvc doctor`; cheap, never raises."""
        ...

    async def aclose(self) -> None: ...
