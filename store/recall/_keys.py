"""Index keys: what a stored message is embedded and full-text indexed as.

A message alone ("yes, the blue one") often says little; its key can carry who
said it, when, and the turn it answered. The variant is a setting
(`CHATSVC_RECALL_KEYS`) so that the recall harness (evals/recall) can compare them:

* `text`: the message text only
* `speaker`: `Name: text`
* `dated`: `8 May 2023, Name: text`
* `context`: the date, then the previous turn of the same conversation, then `Name: text`

A long message is embedded by its first passage only (`embedded_key`, about
PASSAGE_TOKENS tokens of its text) while its whole key is full-text indexed: the
bundled embedder's cost grows with every token (and faster than linearly), and the
opening of a long answer says what it is about.

Pure functions: same message, same key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

KEY_VARIANTS = ("text", "speaker", "dated", "context")
DEFAULT_KEYS = "context"  # measured: evals/results/recall_keys_quick.md
PREVIOUS_CHARS = 300  # of the previous turn in a `context` key: the topic, not all of it
# Of a message's text in its embedded key. Measured: evals/results/long_messages.md.
PASSAGE_TOKENS = 128
# Estimated tokens per character of the e5 (XLM-R) vocabulary: measured 3.8-4.1
# characters a token in English, 1.3 in Chinese (CJK ideographs, kana, hangul).
_WIDE = re.compile(r"[\u1100-\u11ff\u2e80-\ua4cf\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_WIDE_TOKENS, _NARROW_TOKENS = 0.75, 0.25
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@dataclass(frozen=True)
class KeyedMessage:
    """What a key is built from: one message and the one before it in its conversation."""

    role: str
    name: str | None
    content: str
    created_at: str  # ISO-8601
    previous_role: str | None = None
    previous_name: str | None = None
    previous_content: str | None = None


def speaker(role: str, name: str | None) -> str:
    """Who spoke: the message's `name`, else its role as a word."""
    return name or ("User" if role == "user" else "Assistant")


def spoken_date(stamp: str) -> str:
    """'2023-05-08T...' -> '8 May 2023': the words people ask with ("in May")."""
    year, month, day = stamp[:10].split("-")
    return f"{int(day)} {_MONTHS[int(month) - 1]} {year}"


def index_key(variant: str, message: KeyedMessage) -> str:
    if variant not in KEY_VARIANTS:
        raise ValueError(f"unknown key variant {variant!r}: use one of {KEY_VARIANTS}")
    said = f"{speaker(message.role, message.name)}: {message.content}"
    if variant == "text":
        return message.content
    if variant == "speaker":
        return said
    if variant == "dated" or not message.previous_content:
        return f"{spoken_date(message.created_at)}, {said}"
    before = message.previous_content[:PREVIOUS_CHARS]
    previous = f"{speaker(message.previous_role or 'user', message.previous_name)}: {before}"
    return f"{spoken_date(message.created_at)}\n{previous}\n{said}"


def embedded_key(variant: str, message: KeyedMessage, *, tokens: int = PASSAGE_TOKENS) -> str:
    """What is embedded of `message`: its `index_key` with the text cut to its first
    passage (`passage_head`); the same key for a message shorter than that."""
    return index_key(variant, replace(message, content=passage_head(message.content, tokens)))


def passage_head(text: str, tokens: int = PASSAGE_TOKENS) -> str:
    """The start of `text` up to about `tokens` tokens (estimated from its characters),
    cut after the last whitespace within them when there is one (CJK text has none)."""
    budget = float(tokens)
    for end, char in enumerate(text):
        budget -= _WIDE_TOKENS if _WIDE.match(char) else _NARROW_TOKENS
        if budget < 0:
            cut = text[:end]
            space = max(cut.rfind(" "), cut.rfind("\n"))
            return cut[:space].rstrip() if space > end // 2 else cut
    return text
