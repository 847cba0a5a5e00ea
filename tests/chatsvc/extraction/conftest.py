"""Extraction against the scripted OpenAI-compatible upstream on loopback."""

from __future__ import annotations

import json

import pytest

from chatsvc import Services
from chatsvc.testing import Reply


@pytest.fixture
def llm_services(settings, local_embedder, upstream):
    """Services whose LLM is the scripted upstream."""
    opened = Services.open(settings.with_overrides(llm_base_url=upstream.base_url),
                           embedder=local_embedder)
    yield opened
    opened.stores.db.close()


def answer(new_facts=(), referenced=(), superseded=()) -> Reply:
    """A scripted extraction answer in the JSON shape the prompt asks for."""
    body = {"new_facts": [{"category": c, "fact": f} for c, f in new_facts],
            "referenced": list(referenced),
            "superseded": [{"old_id": o, "new_index": i} for o, i in superseded]}
    return Reply(chunks=[json.dumps(body)])
