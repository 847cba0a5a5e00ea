"""Does a fact say only what its quotes say? Pure functions, no I/O.

Two checks. Hard: every number, name and date in the fact occurs in a quote (a wrong
name or year is the worst kind of wrong fact). Soft: the share of the fact's content
units found in the quotes (`coverage`); English units are stemmed words without
stopwords, CJK units are character bigrams. The verifier compares `coverage` with a
threshold measured on LoCoMo (evals/extraction/thresholds.py).

Names: a capitalised word not at a sentence's start, a word with inner capitals, and
in a CJK fact every Latin-script word. CJK has no capitals, so a CJK name is checked
where a naming verb announces it ("狗叫旺财", "姓王"); elsewhere its bigrams count in the
coverage like any other word (a wrong CJK name without a naming verb can slip through).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from chatsvc.extraction import _dates
from chatsvc.extraction._words import (
    CJK,
    NUMBER_WORDS,
    STOPWORDS,
    TOKEN,
    cjk_units,
    fold,
    normalise,
    number,
    spoken_numbers,
    stem,
    zh_numbers,
)

# The fact's subject, which the user's own words never name ("用户住在里昂" <- "我住在里昂").
_ZH_SUBJECT = re.compile("该用户|这位用户|用户")
# A CJK name follows a naming verb ("狗叫旺财"); it ends at a particle or punctuation.
_ZH_NAMED = re.compile(f"(?:名叫|叫做|名为|名字是|名字叫|叫|姓)({CJK.pattern}{{1,4}})")
_ZH_NAME_END = re.compile("[的了是和与在,，。]")
_SENTENCE_END = ".!?:;"
# Short day and month names a quote may use for the fact's full ones ("last Fri").
_SHORT_TEXT = """
monday:mon tuesday:tue,tues wednesday:wed thursday:thu,thur,thurs friday:fri saturday:sat
sunday:sun january:jan february:feb march:mar april:apr june:jun july:jul august:aug
september:sep,sept october:oct november:nov december:dec
"""
_SHORT = {short: full for full, shorts in (pair.split(":") for pair in _SHORT_TEXT.split())
          for short in shorts.split(",")}


@dataclass(frozen=True)
class Support:
    missing: tuple[str, ...]  # numbers, names and dates of the fact no quote holds
    coverage: float  # share of the fact's content units found in the quotes
    units: int  # how many content units the fact has


@dataclass(frozen=True)
class _Quoted:
    """Everything the quotes hold, in the forms the fact is compared in."""

    text: str
    words: frozenset[str]  # folded words, their possessive-free forms and their stems
    numbers: frozenset[str]
    names: frozenset[str]  # names only implied (month and day names of relative dates)
    cjk: frozenset[str]  # CJK characters and bigrams


def support(fact: str, quotes: Sequence[str], *, ignore_words: Collection[str] = (),
            said_at: Sequence[str | None] = ()) -> Support:
    """How well `quotes` (as the user wrote them) support `fact`; `said_at[i]` is when
    quote i was written (ISO), for relative dates."""
    quoted = _quoted(quotes, said_at)
    ignored = {_plain(fold(w)) for name in ignore_words for w in name.split()}
    text = normalise(fact)
    missing = [n for n in _hard_numbers(text) if n not in quoted.numbers]
    missing += [w for w in _names(text, ignored)
                if not _has_word(quoted, w) and fold(w) not in quoted.names]
    missing += [n for n in _zh_names(text) if n not in quoted.text]
    units = _units(text, ignored)
    found = sum(_has_unit(quoted, unit) for unit in units)
    coverage = found / len(units) if units else float(not missing and bool(_hard(text)))
    return Support(tuple(dict.fromkeys(missing)), coverage, len(units))


def _quoted(quotes: Sequence[str], said_at: Sequence[str | None]) -> _Quoted:
    folded = [fold(q) for q in quotes]
    text = " | ".join(folded)
    words, numbers, cjk, implied_names = set(), set(), set(), set()
    spoken = []
    for token in TOKEN.finditer(text):
        if token["word"]:
            word = token["word"]
            spoken.append(word)
            words.update((word, _plain(word), stem(word), _SHORT.get(word, word)))
        elif token["num"]:
            numbers.add(number(token["num"]))
        else:
            cjk.update(token["cjk"])
            cjk.update(cjk_units(token["cjk"]))
    for quote, when in zip(folded, said_at, strict=False):
        implied = _dates.implied(quote, _dates.said_date(when))
        numbers |= implied[0]
        implied_names |= implied[1]
    numbers |= spoken_numbers(spoken) | zh_numbers(text)
    return _Quoted(text, frozenset(words), frozenset(numbers), frozenset(implied_names),
                   frozenset(cjk))


def _plain(word: str) -> str:
    """The word without a possessive or contraction tail: biscuit's -> biscuit."""
    return word.split("'")[0]


def _has_word(quoted: _Quoted, word: str) -> bool:
    folded = fold(word)
    return _plain(folded) in quoted.words or stem(folded) in quoted.words


def _has_unit(quoted: _Quoted, unit: str) -> bool:
    kind, value = unit[0], unit[2:]
    if kind == "n":
        return value in quoted.numbers
    if kind == "c":
        return value in quoted.cjk
    return value in quoted.words


def _hard_numbers(text: str) -> list[str]:
    return [number(t["num"]) for t in TOKEN.finditer(text) if t["num"]]


def _hard(text: str) -> bool:
    return bool(_hard_numbers(text)) or bool(_zh_names(text))


def _names(text: str, ignored: set[str]) -> list[str]:
    """Proper names: capitalised words not at a sentence's start, words with inner
    capitals (LGBTQ, iPhone) and, in a CJK fact, every Latin-script word."""
    in_cjk = bool(CJK.search(text))
    skipped = STOPWORDS | ignored
    names = []
    for token in TOKEN.finditer(text):
        word = token["word"]
        if not word or word == "I" or _plain(word.casefold()) in skipped:
            continue
        before = text[: token.start()].rstrip(" \"'([")
        at_start = not before or before[-1] in _SENTENCE_END
        capital = word[0].isupper() and not at_start
        if in_cjk or capital or any(ch.isupper() for ch in word[1:]):
            names.append(word)
    return names


def _zh_names(text: str) -> list[str]:
    return [_ZH_NAME_END.split(found)[0] for found in _ZH_NAMED.findall(text)
            if _ZH_NAME_END.split(found)[0]]


def _units(text: str, ignored: set[str]) -> list[str]:
    """The fact's content units: "w:stem", "n:number" (a number word), "c:bigram"."""
    units = []
    for token in TOKEN.finditer(fold(text)):
        if token["word"]:
            word = _plain(token["word"])
            if word in STOPWORDS or word in ignored:
                continue
            value = NUMBER_WORDS.get(word)
            units.append(f"n:{value}" if value is not None else f"w:{stem(word)}")
        elif token["cjk"]:
            for run in _ZH_SUBJECT.split(token["cjk"]):
                units.extend(f"c:{u}" for u in sorted(cjk_units(run)) if run)
    return list(dict.fromkeys(units))
