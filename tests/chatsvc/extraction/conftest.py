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


def answer(new_facts=(), referenced=(), superseded=(), forget=()) -> Reply:
    """A scripted extraction answer in the JSON shape the prompt asks for. Each new fact
    is (category, fact, label, quote, label, quote, ...); (category, fact) alone is the
    old shape, without evidence."""
    body = {"new_facts": [_new_fact(*item) for item in new_facts],
            "referenced": list(referenced),
            "superseded": [{"old_id": o, "new_index": i} for o, i in superseded],
            "forget": list(forget)}
    return Reply(chunks=[json.dumps(body, ensure_ascii=False)])


def _new_fact(category: str, fact: str, *cited: str) -> dict:
    if not cited:
        return {"category": category, "fact": fact}
    pairs = zip(cited[::2], cited[1::2], strict=True)
    return {"category": category, "fact": fact,
            "evidence": [{"message": label, "quote": quote} for label, quote in pairs]}
