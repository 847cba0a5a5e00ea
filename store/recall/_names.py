"""Speakers' names in a question: which ones it holds (`names_in`, for the raise of
their messages) and the question without them (`without_names`, for the text a
conversation search embeds).

Why the embedded text leaves them out: in an imported group chat every message's key
names its speaker and the one it answers (`store.recall._keys`), so a speaker's name
matches nearly every key alike and only drowns the question's topic. LoCoMo hybrid
recall@10 0.809 -> 0.815 (26 + 30) and 0.775 -> 0.798 (41-43), semantic 0.614 -> 0.707
and 0.566 -> 0.646 (evals/results/recall_speakers.md); the keyword half and the
speaker's raise still see the whole question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Chinese, Japanese, Korean and Thai words have no spaces between them or take
# particles (민수가): a name in them is matched anywhere.
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _pattern(name: str) -> re.Pattern[str] | None:
    """A name as a word of its own, case aside, with a possessive ("Melanie's" holds
    Melanie, "Melanies" does not); anywhere in an unspaced script. None: blank."""
    key = re.escape(name.strip())
    if not key:
        return None
    if _UNSPACED.search(key):
        return re.compile(key, re.IGNORECASE)
    return re.compile(rf"(?<!\w){key}(?:['’]s)?(?!\w)", re.IGNORECASE)


def names_in(query: str, names: Iterable[str]) -> set[str]:
    """The `names` that `query` holds (see `_pattern`)."""
    return {name for name in names
            if (pattern := _pattern(name)) is not None and pattern.search(query)}


def without_names(query: str, names: Iterable[str]) -> str:
    """`query` less every one of `names` it holds, spaces closed up; `query` itself when
    nothing else would be left."""
    text = query
    for name in sorted(names, key=len, reverse=True):  # "Anabel" before "Ana"
        if (pattern := _pattern(name)) is not None:
            text = pattern.sub(" ", text)
    text = " ".join(text.split())
    return text if any(ch.isalnum() for ch in text) else query
