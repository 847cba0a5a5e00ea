"""Whose fact is it, and which way does it point? Pure functions, no I/O.

Two ways a verbatim quote can still support the wrong fact, both `unsupported`:

* someone else: "My mom is a nurse" holds every word of "Is a nurse", but it is about
  the mother. A quote that opens with the user's relation (or pet) supports only a fact
  that names that relation ("Has a mother who is a nurse").
* negation: "eat meat", cut out of "I don't eat meat", supports no "Eats meat"; and a
  negative fact needs a negation in or just before its quote.

And one way a quote can be overtaken by what the user says after it, `unsupported` too:

* retraction: "I live in Beijing" then "sorry, I live in Tianjin, not Beijing", or "my
  daughter is 7 - no wait, 8": the first value was corrected within the same batch.

Texts are folded (`_words.fold`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatsvc.extraction._words import CJK, CJK_RUN, NEGATION, cjk_units

# Relations by kind: a fact may name the relation in other words ("mom" -> "mother").
_KINDS = """
sister brother sibling | mother mom mum mama | father dad papa | parent parents |
son daughter kid child children baby | wife husband partner spouse boyfriend girlfriend
fiance fiancee ex | friend | cousin | aunt uncle | grandma grandmother grandpa grandfather
grandparent | niece nephew | boss manager | colleague coworker | roommate flatmate |
neighbor neighbour | teacher | doctor | dog puppy pet | cat kitten pet |
姐姐 妹妹 哥哥 弟弟 | 妈妈 母亲 | 爸爸 父亲 | 儿子 女儿 孩子 | 老婆 妻子 | 老公 丈夫 |
前夫 前妻 | 男朋友 女朋友 | 朋友 | 同事 | 室友 | 邻居 | 老板 | 表姐 表妹 表哥 表弟 堂哥 堂弟 |
奶奶 爷爷 外婆 外公 姥姥 姥爷 | 舅舅 阿姨 叔叔 | 狗 | 猫
"""
_KIN = {word: frozenset(group.split()) for group in _KINDS.split("|") for word in group.split()}
_EN = "|".join(sorted((w for w in _KIN if w.isascii()), key=len, reverse=True))
_ZH = "|".join(sorted((w for w in _KIN if not w.isascii()), key=len, reverse=True))
_EN_FILLER = ("(?:(?:older|younger|little|big|baby|best|old|new|ex|late|eldest|oldest|youngest|"
              "twin|step|dear|two|three|four|five)[ -])*")
# The quote's subject is the user's relation: "my older sister Sam ...", "我的好朋友阿杰..."
_ABOUT_RELATION = re.compile(
    rf"^\W*(?:my|our) {_EN_FILLER}({_EN})(?:s|es)?\b(?!,? and (?:i|me)\b)"
    rf"|^\W*我们?的?(?:好|老|小|大|亲|新|最好的)?({_ZH})(?![和跟与同]我)")
_ZH_NEGATION = re.compile("[不没别未无]")
_WORD = re.compile(r"[\w']+")
_BOUNDARY = re.compile(r"[.!?。;\n]")
_INTERJECTION = re.compile(r"[,:;、-]\s*$")


def mismatch(fact: str, quotes: Sequence[tuple[str, str]]) -> str | None:
    """Why the quotes, each given as (its message's text before it, the quote), do not
    support `fact` despite holding its words; None when nothing points elsewhere."""
    for _, quote in quotes:
        relation = _ABOUT_RELATION.search(quote)
        if relation and not any(kin in fact for kin in _KIN[relation[1] or relation[2]]):
            return "about someone else"
    if not NEGATION.search(fact):
        negated = any(_negated_before(before) for before, _ in quotes)
        return "negated in its message" if negated else None
    if not any(NEGATION.search(quote) or _negated_before(before) for before, quote in quotes):
        return "negation not quoted"
    return None


def _negated_before(before: str) -> bool:
    """Does a negation end the text right before the quote ("I don't | eat meat")?"""
    tail = _BOUNDARY.split(before)[-1]
    if _INTERJECTION.search(tail):  # "No, | I live in Grenoble" corrects, it does not negate
        return False
    if _ZH_NEGATION.search(tail[-2:]):
        return True
    last = " ".join(_WORD.findall(tail[-48:])[-3:])
    return bool(NEGATION.search(last))


# A correction right after the quote, in the same message: "7 - no wait, 8", "7岁，哦不对".
_TAKEN_BACK = re.compile(
    r"^\W{0,3}(?:no,? wait|no no|i mean|scratch that|actually,? no|哦?不对|说错了|我是说|不不)")
# A value the user denies later: "not Lyon", "no longer in Lyon", "不是北京", "不再住在北京".
# English only for a name or number of the fact (capitalised after its first word, or
# digits): "I'm not running this week" takes back no "Loves running".
_EN_DENIED = re.compile(
    r"\b(?:not|isn't|wasn't|aren't|weren't|no longer|never)\s+"
    r"(?:(?:in|at|from|a|an|the|with|called|named)\s+)?([\w'-]+)")
_ZH_DENIED = re.compile(f"(?:不是|不在|不再|并非|已经不|没在)({CJK.pattern}{{1,6}})")


def retracted(fact: str, after: str, later: Sequence[str]) -> bool:
    """Has the user taken the quote back: right after it (`after`, the rest of its
    message), or by denying one of the fact's values in a later message (`later`)?
    `after` and `later` are folded; `fact` is as the LLM wrote it."""
    if _TAKEN_BACK.search(after):
        return True
    words = {word.casefold() for word in _WORD.findall(fact)[1:]
             if word[0].isupper() or word.isdigit()}
    fact_pairs = _pairs(fact)
    for text in (after, *later):
        if any(value.casefold() in words for value in _EN_DENIED.findall(text)):
            return True
        kept = _ZH_DENIED.sub(" ", text)  # the message's own positive words keep a pair
        for denied in _ZH_DENIED.findall(text):
            if (_pairs(denied) & fact_pairs) - _pairs(kept):
                return True
    return False


def _pairs(text: str) -> set[str]:
    return {pair for run in CJK_RUN.findall(text) for pair in cjk_units(run) if len(pair) == 2}
