"""One extraction run against the real local LLM (Gemma 3 270M): the pipeline
completes; what the small model extracts is not asserted."""

from __future__ import annotations

import asyncio

import pytest

from chatsvc import Services
from chatsvc.local_models import GEMMA, LlamaServer
from chatsvc.testing import bundled_llm_cpu
from tests import _seed


@pytest.fixture(scope="module")
def one_thread_llm(tmp_path_factory):
    # One thread: on a small shared machine llama.cpp's spinning threads slow each other
    # down several times over.
    with LlamaServer(tmp_path_factory.mktemp("models"), n_ctx=4096, threads=1,
                     cpu=bundled_llm_cpu()) as server:
        yield server


@pytest.mark.slow
def test_pipeline_completes_with_the_local_llm(settings, local_embedder, one_thread_llm, alice):
    s = Services.open(settings.with_overrides(
        llm_base_url=one_thread_llm.base_url, llm_model=GEMMA.name, llm_timeout_seconds=600,
        extract_json_mode="schema", extract_max_input_tokens=3000, extract_max_output_tokens=300,
    ), embedder=local_embedder)
    user = alice[0]
    conv = _seed.conversation(s.stores.db, user.id)
    for role, text in [("user", "Hi, I'm Marta. I work as a nurse in Lyon."),
                       ("assistant", "Nice to meet you, Marta!"),
                       ("user", "I'm learning Rust to build a small shift planner.")]:
        _seed.message(s.stores.db, user.id, conv, text, role=role)

    async def run():
        try:
            return await s.extractor.run_user(user.id)
        finally:
            await s.llm.aclose()

    try:
        result = asyncio.run(run())
        assert result.failed_batches == 0, result.errors
        assert result.processed_messages == 3
        assert s.stores.fact_sheets.latest(user.id).id == result.fact_sheet_id
        assert s.extractor.queue.unprocessed_count(user.id) == 0
    finally:
        s.stores.db.close()
