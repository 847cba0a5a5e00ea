"""A search's query embedding with other work taken while a service computes it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from chatsvc._threads import in_thread
from chatsvc.embeddings._base import Embedder

T = TypeVar("T")


async def embed_beside(embedder: Embedder, query: str, work: Callable[[], T] | None
                       ) -> tuple[list[float], T | None]:
    """(the query's vector, `work()` or None). With a service (Ollama, an OpenAI-compatible
    API), or the in-process model on a query it embeds on one core, `work` runs in a
    worker thread during the wait; when the model takes every core, or a breaker is
    already open, it does not run: beside that model both were slower on 2 cores
    (docs/chat.md, Benchmark), and a failed embedding leaves the search to its fallback."""
    if work is None or embedder.shares_cores(query):
        return await embedder.embed_query(query), None
    embedding = asyncio.create_task(embedder.embed_query(query))
    await asyncio.sleep(0)  # the call starts; an open breaker fails it here, at once
    if embedding.done():
        return embedding.result(), None
    try:
        done = await in_thread(work)
    except BaseException:
        embedding.cancel()
        await asyncio.gather(embedding, return_exceptions=True)  # its error is not lost
        raise
    return await embedding, done
