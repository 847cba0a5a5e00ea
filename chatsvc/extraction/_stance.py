"""Whose fact is it, and which way does it point? Pure functions, no I/O.

Two ways a verbatim quote can still support the wrong fact, both `unsupported`:

* someone else: "My mom is a nurse" holds every word of "Is a nurse", but it is about
  the mother. A quote that opens with the user's relation (or pet) supports only a fact
  that names that relation ("Has a mother who is a nurse").
* negation: "eat meat", cut out of "I don't eat meat", supports no "Eats meat"; and a
  negative fact needs a negation in or just before its quote.

Texts are folded (`_words.fold`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatsvc.extraction._words import NEGATION

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
