"""Text folding and word units for the fact verifier: pure functions, no I/O.

`fold` makes a quote and its message comparable (NFKC, casefold, one kind of quote
mark and dash, single spaces). Words are split by script: Latin-like words are
lightly stemmed so that lives~live and called~call meet; CJK text has no spaces, so
it is compared by character bigrams.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import pairwise

_CJK_RANGES = "\u1100-\u11ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
CJK = re.compile(f"[{_CJK_RANGES}]")
CJK_RUN = re.compile(f"[{_CJK_RANGES}]+")
_LETTER = rf"[^\W\d_{_CJK_RANGES}]"
# One token: a CJK run, a number (thousands commas kept, dropped later) or a word.
TOKEN = re.compile(
    rf"(?P<cjk>{CJK.pattern}+)|(?P<num>\d+(?:,\d{{3}})*)|(?P<word>{_LETTER}+(?:'{_LETTER}+)*)")

# A negation, English or Chinese, anywhere in a folded text.
NEGATION = re.compile(
    r"\b(?:not|no|never|nobody|nothing|neither|nor|none|hardly|without)\b|n't\b"
    r"|\b(?:dont|doesnt|didnt|isnt|wasnt|cant|wont|havent|hasnt)\b|[不没别未无]")
# What a Chinese negation covers: the few characters after it ("不是北京", "没去过上海");
# 不错, 不过, 不少 ... are no negations.
ZH_NEGATED = re.compile(
    f"(?:不是|不在|没有|并非|(?!不错|不过|不少|不久|不断|不同|不仅|不但)不|没|未)[{_CJK_RANGES}]{{0,4}}")
NEGATION_REACH = 3  # an English negation covers the next three words ("don't live in Lyon")

_MARKS = str.maketrans({
    **dict.fromkeys("‘’‚‛′`´", "'"), **dict.fromkeys("“”„‟″«»「」『』", '"'),
    **dict.fromkeys("‐‑‒–—―−﹘﹣", "-"), **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff", ""),
})
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC with quote marks and dashes unified and spaces single; case kept."""
    text = unicodedata.normalize("NFKC", text).translate(_MARKS)
    return _SPACE.sub(" ", text).strip()


def fold(text: str) -> str:
    """`normalise`, then casefolded: the form quotes are looked up in."""
    return normalise(text).casefold()


_STOPWORD_TEXT = """
a an the and or but of to in on at for with from by about as into onto over after before
under between through during without within up down out off than then so too very just
also only own same such both each few more most other some any all is am are was were be
been being have has had having do does did doing will would shall should can could may
might must i me my mine myself we us our ours you your yours he him his she her hers it
its they them their theirs this that these those there here who whom whose which what when
where why how user users s t d ll m re ve don doesn didn isn wasn aren weren haven hasn
hadn couldn wouldn shouldn now really much many lot lots get got gets getting recently
currently often usually sometimes someone something thing things
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_IRREGULAR_TEXT = """
went:go gone:go goes:go did:do done:do does:do got:get gotten:get had:have has:have
made:make took:take taken:take bought:buy said:say saw:see seen:see found:find felt:feel
kept:keep left:leave met:meet paid:pay ran:run sat:sit told:tell thought:think
taught:teach brought:bring began:begin begun:begin came:come became:become gave:give
given:give knew:know known:know wrote:write written:write won:win lost:lose built:build
spent:spend sold:sell held:hold grew:grow grown:grow drove:drive ate:eat eaten:eat
fell:fall flew:fly swam:swim sang:sing drew:draw children:child men:man women:woman
people:person feet:foot teeth:tooth was:be were:be is:be are:be am:be
"""
_IRREGULAR = dict(pair.split(":") for pair in _IRREGULAR_TEXT.split())

_NUMBER_TEXT = """
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
fifteen sixteen seventeen eighteen nineteen twenty | _ first second third fourth fifth
sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth
sixteenth seventeenth eighteenth nineteenth twentieth | twenty thirty forty fifty sixty
seventy eighty ninety
"""
_CARDINALS, _ORDINALS, _TENS_WORDS = (part.split() for part in _NUMBER_TEXT.split("|"))
_TENS = dict(zip(_TENS_WORDS, range(20, 100, 10), strict=True))
NUMBER_WORDS = {**{w: n for n, w in enumerate(_CARDINALS)},
                **{w: n for n, w in enumerate(_ORDINALS) if n}, **_TENS,
                "dozen": 12, "hundred": 100, "thousand": 1000}
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}
_ZH_NUMBER = re.compile("[零〇一二两三四五六七八九十百]+")


def negates(word: str) -> bool:
    return word in _NEGATORS or word.endswith("n't")


_NEGATORS = frozenset({"not", "no", "never", "nobody", "nothing", "neither", "nor", "none",
                       "hardly", "without"})


@lru_cache(maxsize=16384)  # words repeat: a cached stem costs a dict lookup
def stem(word: str) -> str:
    """A light English stem: enough for lives~live~living, called~call, stories~story."""
    word = word.split("'")[0] if "'" in word else word
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix, shortest in (("ing", 6), ("ed", 5), ("er", 6), ("ly", 6)):
        if word.endswith(suffix) and len(word) >= shortest:
            word = word[: -len(suffix)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, but call and dress stay
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def number(text: str) -> str:
    """A number token's canonical form: no thousands commas, no leading zeros."""
    return str(int(text.replace(",", "")))


def cjk_units(run: str) -> set[str]:
    """Character bigrams of a CJK run (a single character stands for itself)."""
    return {run} if len(run) == 1 else {run[i : i + 2] for i in range(len(run) - 1)}


def zh_numbers(text: str) -> set[str]:
    """Numbers written with Chinese numerals: 两 -> 2, 十五 -> 15, 一九九零 -> 1990."""
    found = set()
    for run in _ZH_NUMBER.findall(text):
        if "十" not in run and "百" not in run:
            found.add(str(int("".join(str(_ZH_DIGITS[ch]) for ch in run))))
            continue
        total, digit = 0, 0
        for ch in run:
            if ch in "十百":
                total += max(digit, 1) * (10 if ch == "十" else 100)
                digit = 0
            else:
                digit = _ZH_DIGITS[ch]
        found.add(str(total + digit))
    return found


def spoken_numbers(words: list[str]) -> set[str]:
    """Numbers written as English words, "twenty five" / "twenty-five" included."""
    values = [NUMBER_WORDS.get(w) for w in words]
    found = {str(v) for v in values if v is not None}
    for tens, unit in pairwise(values):
        if tens in _TENS.values() and unit is not None and unit < 10:
            found.add(str(tens + unit))
    return found
