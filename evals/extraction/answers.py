"""Scripted extraction answers, built from the request the service sends: the bad
answers a careless model gives (fabricated quotes, the assistant's words, questions,
facts the quote does not support, no evidence) and good ones (an exact quote of a user
statement and the fact it states). Each `Case` makes one new fact, or None when the
conversation has no line it needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from evals.extraction.shown import Shown, prompt_text, shown_messages

Answer = dict  # the JSON object an extraction answer holds
_CONDITION = re.compile(r"^(if|suppose|imagine|假如|如果|假设|要是)", re.IGNORECASE)
_OTHER_COMMA = str.maketrans({",": "，", "，": ","})
_CJK = re.compile(r"[\u3400-\u9fff]")
FABRICATED = {"en": "I grew up on a houseboat in Zanzibar.", "zh": "我在桂林的一条船上长大。"}
# A name and a number that no quote holds, added to a fact its quote otherwise supports.
UNSUPPORTED_TAIL = {"en": ", with Zorblax since 1987", "zh": "，自1987年起和佐布拉克斯一起"}


@dataclass(frozen=True)
class Case:
    name: str
    expected: str  # "kept" or "rejected"
    reason: str | None  # the `rejected` key a rejection should be counted under
    build: Callable[[list[Shown], str, str], Answer | None]  # shown, lang, prompt


def answer(new_facts: list[dict]) -> Answer:
    return {"new_facts": new_facts, "referenced": [], "superseded": [], "forget": []}


def grounded(fact: str, label: str, quote: str) -> dict:
    return {"category": "core", "fact": fact, "evidence": [{"message": label, "quote": quote}]}


def statements(shown: list[Shown]) -> list[tuple[Shown, str]]:
    """(message, sentence) for the user's plain statements: no question, no condition."""
    return [(m, s) for m in shown if m.role == "user" for s in m.sentences()
            if not s.endswith(("?", "？")) and not _CONDITION.match(s) and _long_enough(s)]


def _long_enough(sentence: str) -> bool:
    return len(sentence.split()) >= 3 or len(_CJK.findall(sentence)) >= 4


def _first(items: list):
    return items[0] if items else None


def _user_sentences(shown: list[Shown], keep: Callable[[str], bool]) -> list[tuple[Shown, str]]:
    return [(m, s) for m in shown if m.role == "user" for s in m.sentences() if keep(s)]


def _good_exact(shown, lang, prompt):
    if found := _first(statements(shown)):
        message, sentence = found
        return answer([grounded(sentence, message.label, sentence)])
    return None


def _good_folded(shown, lang, prompt):
    """The quote as a model retypes it: other case, doubled spaces, the other width of
    comma (NFKC, case and whitespace folding make it the same words)."""
    if found := _first(statements(shown)):
        message, sentence = found
        retyped = "  ".join(sentence.swapcase().split()).translate(_OTHER_COMMA)
        return answer([grounded(sentence, message.label, retyped)])
    return None


def _fabricated(shown, lang, prompt):
    if user := _first([m for m in shown if m.role == "user"]):
        return answer([grounded(FABRICATED[lang].rstrip(".。"), user.label, FABRICATED[lang])])
    return None


def _from_prompt(shown, lang, prompt):
    """A line of the instructions (the demo's "Works as a nurse in Lyon"), cited as the
    user's."""
    instructions = prompt.split("Conversation:")[0]
    lines = [line.strip("-• ").strip() for line in instructions.split("\n")]
    rule = _first([line for line in lines if len(line.split()) >= 6])
    user = _first([m for m in shown if m.role == "user"])
    return answer([grounded(rule, user.label, rule)]) if rule and user else None


def _assistant_sentence(shown):
    return _first([(m, s) for m in shown if m.role == "assistant" for s in m.sentences()
                   if _long_enough(s)])


def _assistant_quote(shown, lang, prompt):
    if found := _assistant_sentence(shown):
        message, sentence = found
        return answer([grounded(sentence, message.label, sentence)])
    return None


def _assistant_as_user(shown, lang, prompt):
    found, user = _assistant_sentence(shown), _first([m for m in shown if m.role == "user"])
    if found and user:
        return answer([grounded(found[1], user.label, found[1])])
    return None


def _question(shown, lang, prompt):
    def plain_question(sentence: str) -> bool:
        return sentence.endswith(("?", "？")) and not _CONDITION.match(sentence)

    if found := _first(_user_sentences(shown, plain_question)):
        message, sentence = found
        return answer([grounded(sentence.rstrip("?？"), message.label, sentence)])
    return None


def _condition(shown, lang, prompt):
    if found := _first(_user_sentences(shown, lambda s: bool(_CONDITION.match(s)))):
        message, sentence = found
        return answer([grounded(sentence, message.label, sentence)])
    return None


def _unsupported(shown, lang, prompt):
    if found := _first(statements(shown)):
        message, sentence = found
        fact = sentence.rstrip(".。!！") + UNSUPPORTED_TAIL[lang]
        return answer([grounded(fact, message.label, sentence)])
    return None


def _unknown_message(shown, lang, prompt):
    if found := _first(statements(shown)):
        return answer([grounded(found[1], "m999", found[1])])
    return None


def _old_shape(shown, lang, prompt):
    if found := _first(statements(shown)):
        return {"new_facts": [{"category": "core", "fact": found[1]}], "referenced": [],
                "superseded": []}
    return None


def _empty_evidence(shown, lang, prompt):
    if found := _first(statements(shown)):
        return answer([{"category": "core", "fact": found[1], "evidence": []}])
    return None


CASES = (
    Case("good_exact_quote", "kept", None, _good_exact),
    Case("good_retyped_quote", "kept", None, _good_folded),
    Case("fabricated_quote", "rejected", "quote_not_found", _fabricated),
    Case("quote_from_prompt", "rejected", "quote_not_found", _from_prompt),
    Case("assistant_quote", "rejected", "not_user", _assistant_quote),
    Case("assistant_quote_cited_as_user", "rejected", "quote_not_found", _assistant_as_user),
    Case("user_question", "rejected", "not_a_statement", _question),
    Case("user_hypothetical", "rejected", "not_a_statement", _condition),
    Case("unsupported_name_and_number", "rejected", "unsupported", _unsupported),
    Case("unknown_message", "rejected", "quote_not_found", _unknown_message),
    Case("old_shape_no_evidence", "rejected", "no_evidence", _old_shape),
    Case("empty_evidence", "rejected", "no_evidence", _empty_evidence),
)


def echo_every_message(shown: list[Shown]) -> Answer:
    """What a careless model does: every message's first sentence becomes a fact about the
    user, quoted exactly from it (assistant lines, questions and instructions too)."""
    facts = [grounded(m.sentences()[0], m.label, m.sentences()[0])
             for m in shown if m.sentences()]
    return answer(facts)


def reply_text(body: dict, make: Callable[[list[Shown], str], Answer | None]) -> str:
    """The answer `make(shown, prompt)` builds for this request, as the model's text."""
    prompt = prompt_text(body)
    return json.dumps(make(shown_messages(prompt), prompt) or answer([]), ensure_ascii=False)
