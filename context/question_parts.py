"""The parts of a question that asks several things at once, and one ranking made of
the rankings of its parts. Pure text work, no I/O.

Conversation search ranks each part on its own and merges the rankings in turns
(`merged`), so the evidence of each part reaches the top: a question's words and vector otherwise
favour the messages about whichever part they share most with. A question has parts when

* it is several questions in a row, each ending in a question mark ("…? Also, …?",
  "…？另外，…？"): each is a part, its leading "also" / "另外" dropped;
* it joins two names ("Did Caroline and Melanie both …", "What do Jon and Gina have in
  common?", "小明和小红都…") or two things each with its own article or possessive
  ("the smart thermostat or the new router", "my boots and my coat"): one part per name
  or thing, the other left out.

Anything else is one part, the question itself: a statement followed by a question ("I
moved in May. Where to?") stays whole (the question needs the statement), and so do
"and" between lower-case words ("camping and hiking" is often one activity).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_PARTS = 4  # each part costs a search; more than this is rarely a question
# Parts shorter than this (letters and digits; a CJK character counts twice) are
# fragments ("Why?", "Really?"), kept with their neighbour.
MIN_PART_CHARS = 6
# Reciprocal-rank fusion's constant, for the order among hits of the same place.
RRF_K = 10

_QUESTION_END = re.compile(r"(?<=[?？])\s*")
_CONNECTIVE = re.compile(
    r"^(?:(?:and|also|plus|besides|and also|oh,? and|by the way)\b[,，:]?\s*"
    r"|(?:另外|还有|此外|以及|并且|而且|那么|顺便问一下|顺便问下|顺便)[,，、：:]?\s*)+",
    re.IGNORECASE)
_NAME = r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?"
# Capitalised words that are no names: question words, auxiliaries, the pronoun I.
_NOT_NAMES = frozenset({
    "what", "when", "where", "who", "whom", "whose", "why", "which", "how", "did", "do",
    "does", "is", "are", "was", "were", "will", "would", "can", "could", "should", "has",
    "have", "had", "i", "i'm", "i've", "i'd", "the", "a", "an", "my", "in", "on", "at",
    "and", "or", "but", "if", "tell", "remind", "show", "list"})
_NAMES = re.compile(rf"\b(?:both\s+)?({_NAME})\s+(?:and|&)\s+({_NAME})\b")
_DETERMINER = r"(?:the|my|a|an|his|her|their|our|your)"
_THINGS = re.compile(
    rf"\b({_DETERMINER}\s+(?:(?!\b{_DETERMINER}\b)[^,?!.;])+?)\s+(?:and|or)\s+"
    rf"({_DETERMINER}\s+[^,?!.;]+?)"
    r"(?=\s*(?:[,?!.;]|$))", re.IGNORECASE)
_ZH_NAMES = re.compile(
    r"([\u4e00-\u9fff]{2,4}?)(?:和|跟|与|同)([\u4e00-\u9fff]{2,4}?)(?=都|有什么共同|的共同|共同|分别)")
_BOTH = re.compile(r"\s+both\b|都", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]")


def parts(question: str) -> list[str]:
    """The parts of `question` (at most MAX_PARTS), or `[question]` when it asks one thing."""
    found = [p for sentence in _sentences(question) for p in _coordinated(sentence)]
    return found[:MAX_PARTS] if len(found) > 1 else [question]


def merged(rankings: Sequence[Sequence[str]], limit: int) -> list[tuple[str, float]]:
    """The ids of several rankings (best first) taken in turns: every ranking's first,
    then every second, and so on, each id once, at its best place; among the ids of one
    turn, those more rankings hold (by their reciprocal ranks, RRF_K) first, then by id.
    Score: 1 / that best place. The best `limit`."""
    fused: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (RRF_K + rank)
            best[item] = min(best.get(item, rank), rank)
    ordered = sorted(fused, key=lambda item: (best[item], -fused[item], item))
    return [(item, 1.0 / best[item]) for item in ordered[:limit]]


def _sentences(question: str) -> list[str]:
    """The questions asked one after another, or the whole text when any sentence of it
    is not a question (a statement gives the questions after it their sense)."""
    pieces = [p.strip() for p in _QUESTION_END.split(question.strip()) if p.strip()]
    if len(pieces) < 2 or not all(p[-1] in "?？" for p in pieces):
        return [question.strip()]
    kept: list[str] = []
    for piece in (_CONNECTIVE.sub("", p) for p in pieces):
        if kept and _size(piece) < MIN_PART_CHARS:
            kept[-1] = f"{kept[-1]} {piece}"
        else:
            kept.append(piece)
    return kept if _size(kept[0]) >= MIN_PART_CHARS else [question.strip()]


def _coordinated(sentence: str) -> list[str]:
    """One sentence per name or thing of the first pair it joins, or the sentence."""
    for pattern in (_NAMES, _ZH_NAMES, _THINGS):
        for found in pattern.finditer(sentence):
            first, second = found[1], found[2]
            if pattern is _NAMES:  # "Did Caroline and …": the name is "Caroline"
                first = _name_end(first)
                if not first or _name_end(second) != second:
                    continue
            head = sentence[:found.end(1) - len(first)]
            tail = sentence[found.end():]
            return [_tidy(head + one + tail) for one in (first, second)]
    return [sentence]


def _name_end(words: str) -> str:
    """`words` after any leading word that is no name ("Did Caroline" -> "Caroline")."""
    kept = words.split()
    while kept and kept[0].casefold() in _NOT_NAMES:
        kept.pop(0)
    return " ".join(kept)


def _tidy(part: str) -> str:
    """A part without the "both" that joined it to the other."""
    return re.sub(r"\s{2,}", " ", _BOTH.sub("", part)).strip()


def _size(text: str) -> int:
    return sum(2 if _CJK.match(ch) else 1 for ch in text if ch.isalnum())
