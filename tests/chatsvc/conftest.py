"""Fixtures shared by the service tests."""

import pytest

from chatsvc import Services, Settings


@pytest.fixture
def small_chunks(monkeypatch, local_embedder):
    """Services whose chunks are short, so a 150-chunk document embeds in seconds; no LLM
    tiers, so adding a document answers at once (its job is still running then)."""
    monkeypatch.setenv("CHATSVC_CHUNK_MAX_CHARS", "120")
    monkeypatch.setenv("CHATSVC_CHUNK_OVERLAP_CHARS", "10")
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    opened = Services.open(Settings.from_env(), embedder=local_embedder)
    yield opened
    opened.stores.db.close()
