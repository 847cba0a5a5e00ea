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
from dataclasses import dataclass, replace

from chatsvc.extraction import _dates
from chatsvc.extraction._words import (
    CJK,
    CJK_RUN,
    NEGATION,
    NEGATION_REACH,
    NUMBER_WORDS,
    STOPWORDS,
    TOKEN,
    ZH_NEGATED,
    cjk_units,
    fold,
    negates,
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
# Characters that carry grammar more than content: a fact may add them freely.
_ZH_FUNCTION = frozenset("有一个是的了在和与也都很会能要对他她它们这那该位名为叫被把给从到去"
                         "过着得地还又已经曾正将其之于及或但而且就才只最更非常每些种次年月日岁多"
                         "我你")
_SENTENCE_END = ".!?:;"
_CLAUSE_END = re.compile(r"[.!?;,|。，！？；]")
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
    # The same outside the reach of a negation: what a positive fact may use ("Lives in
    # Lyon" finds no Lyon in "I live in Grenoble, not Lyon").
    asserted_words: frozenset[str]
    asserted_cjk: frozenset[str]

    def positive(self) -> _Quoted:
        return replace(self, words=self.asserted_words, cjk=self.asserted_cjk)


def support(fact: str, quotes: Sequence[str], *, ignore_words: Collection[str] = (),
            said_at: Sequence[str | None] = ()) -> Support:
    """How well `quotes` (as the user wrote them) support `fact`; `said_at[i]` is when
    quote i was written (ISO), for relative dates."""
    quoted = _quoted(quotes, said_at)
    text = normalise(fact)
    if not NEGATION.search(fold(text)):
        quoted = quoted.positive()
    ignored = {_plain(fold(w)) for name in ignore_words for w in name.split()}
    missing = [n for n in _hard_numbers(text) if n not in quoted.numbers]
    missing += [w for w in _names(text, ignored)
                if not _has_word(quoted, w) and fold(w) not in quoted.names]
    missing += [n for n in _zh_names(text) if n not in quoted.text]
    missing += _zh_novel(text, quoted)
    units = _units(text, ignored)
    found = sum(_has_unit(quoted, unit) for unit in units)
    coverage = found / len(units) if units else float(not missing and bool(_hard(text)))
    return Support(tuple(dict.fromkeys(missing)), coverage, len(units))


def _quoted(quotes: Sequence[str], said_at: Sequence[str | None]) -> _Quoted:
    folded = [fold(q) for q in quotes]
    text = " | ".join(folded)
    words, asserted, numbers, implied_names = set(), set(), set(), set()
    spoken: list[str] = []
    reach, last_end = 0, 0  # how many more words the last negation covers
    for token in TOKEN.finditer(text):
        if _CLAUSE_END.search(text, last_end, token.start()):
            reach = 0  # a negation ends with its clause: "I don't smoke. I live in Lyon."
        last_end = token.end()
        if token["word"]:
            word = token["word"]
            spoken.append(word)
            forms = (word, _plain(word), stem(word), _SHORT.get(word, word))
            words.update(forms)
            if reach <= 0:
                asserted.update(forms)
            if negates(word):  # a second negation in reach cancels the first
                reach = 0 if reach > 0 else NEGATION_REACH  # ("can't live without")
            else:
                reach -= 1
        elif token["num"]:
            numbers.add(number(token["num"]))
    for quote, when in zip(folded, said_at, strict=False):
        implied = _dates.implied(quote, _dates.said_date(when))
        numbers |= implied[0]
        implied_names |= implied[1]
    numbers |= spoken_numbers(spoken) | zh_numbers(text)
    return _Quoted(text, frozenset(words), frozenset(numbers), frozenset(implied_names),
                   _cjk(text), frozenset(asserted), _cjk(ZH_NEGATED.sub("|", text)))


def _cjk(text: str) -> frozenset[str]:
    found = set()
    for run in CJK_RUN.findall(text):
        found.update(run)
        found.update(cjk_units(run))
    return frozenset(found)


def _zh_novel(text: str, quoted: _Quoted) -> list[str]:
    """Runs of two or more CJK characters of the fact of which no quote has a single one
    (function characters aside): new content, most often a name ("住在天津" <- "我住在里昂")."""
    novel = []
    for run in CJK_RUN.findall(_ZH_SUBJECT.sub("|", text)):
        new = ""
        for ch in [*run, ""]:  # "" closes the last piece
            if ch and ch not in quoted.cjk and ch not in _ZH_FUNCTION:
                new += ch
                continue
            if len(new) >= 2:
                novel.append(new)
            new = ""
    return novel


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
