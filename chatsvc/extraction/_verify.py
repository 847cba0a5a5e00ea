"""Verify a new fact against the evidence the LLM gave for it: pure, no I/O.

A fact is stored only when the user's own words support it. The rules run in this
order and the first that fails names the verdict:

* `no_evidence`: no quote at all (an answer in the old shape stores nothing);
* `not_user`: a quote cites a message the assistant, the system or a tool wrote;
* `quote_not_found`: a quote is not in its message (after NFKC, case, space, quote-mark
  and dash folding), is shorter than 3 characters, or cites a label the request never
  showed. An unknown label is a fabricated citation, not a misattributed one: there is
  no message whose author could be wrong, only a quote that is nowhere to be found;
* `unsupported`: a number, name or date of the fact is in no quote, or too few of its
  content words are (`MIN_COVERAGE`, measured on LoCoMo: evals/extraction/thresholds.py),
  or the quote is about the user's relation, or negated where the fact is not, or taken
  back by the user right after it or in a later message of the batch (_stance);
* `not_a_statement`: a quote is a question, condition, request, role-play line,
  instruction to the system or sarcasm, or the fact claims rights in this service.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from chatsvc.extraction import _stance, _statement
from chatsvc.extraction._support import support
from chatsvc.extraction._words import CJK, fold

REASONS = ("no_evidence", "not_user", "quote_not_found", "unsupported", "not_a_statement")

# The least share of a fact's content units its quotes must hold: the highest value
# (0.05 steps) that keeps 99 % of true LoCoMo observation/turn pairs of conversations 26
# and 30 (99.4 %; it rejects 87 % of false pairs). evals/results/extraction_quality.md.
MIN_COVERAGE = 0.2
MIN_QUOTE_CHARS = 3
# Marks a quote may add or drop at its ends ("I live in Lyon" for "I live in Lyon.").
_EDGE = " .,!?;:'\"…。，！？；：、-()[]"


@dataclass(frozen=True)
class Quote:
    """One piece of evidence as the LLM gave it."""

    message: str  # the label, e.g. "m3"
    quote: str


@dataclass(frozen=True)
class Shown:
    """One message as the extraction request showed it."""

    label: str  # "m3"
    role: str  # "user" | "assistant" | "system" | "tool"
    content: str
    said_at: str | None = None  # ISO time the message was written


@dataclass(frozen=True)
class Verdict:
    reason: str | None  # None: grounded; else one of REASONS (the first that fails)
    detail: str = ""  # short, for the debug log line; never the user's text


_Span = tuple[Shown, str, int, int]  # message, its folded text, quote start, quote end


def verify(fact: str, evidence: Sequence[Quote], shown: Mapping[str, Shown], *,
           ignore_words: Collection[str] = (), min_coverage: float = MIN_COVERAGE) -> Verdict:
    """Whether `fact` is grounded in the user's messages of `shown` (keyed by label)."""
    if not evidence:
        return Verdict("no_evidence")
    cited = [(quote, _message(shown, quote.message)) for quote in evidence]
    for _, message in cited:
        if message is not None and message.role != "user":
            return Verdict("not_user", f"{message.label} is {message.role}")
    spans = _spans(cited)
    if isinstance(spans, Verdict):
        return spans
    found = support(fact, [text[a:b] for _, text, a, b in spans], ignore_words=ignore_words,
                    said_at=[message.said_at for message, *_ in spans])
    if found.missing:
        return Verdict("unsupported", f"{len(found.missing)} names/numbers not quoted")
    if found.coverage < min_coverage:
        return Verdict("unsupported", f"coverage {found.coverage:.2f} < {min_coverage:.2f}")
    stance = _stance.mismatch(fold(fact), [(text[:a], text[a:b]) for _, text, a, b in spans])
    if stance:
        return Verdict("unsupported", stance)
    later = list(_users(shown, lambda at: at > max(_order(m.label) for m, *_ in spans)))
    if any(_stance.retracted(fact, text[b:], later) for _, text, _a, b in spans):
        return Verdict("unsupported", "taken back later")
    if _statement.privilege(fold(fact)):
        return Verdict("not_a_statement", "privilege claim in fact")
    for message, text, a, b in spans:
        problem = _statement.problem(text, a, b, _earlier(shown, message))
        if problem:
            return Verdict("not_a_statement", f"{problem} in {message.label}")
    return Verdict(None)


def _spans(cited: list[tuple[Quote, Shown | None]]) -> list[_Span] | Verdict:
    """Where each quote lies in its folded message, or why one lies nowhere."""
    spans = []
    for quote, message in cited:
        if not isinstance(quote.quote, str):  # the LLM's JSON is untrusted: "quote": 3
            return Verdict("quote_not_found", "quote is not text")
        if message is None:
            return Verdict("quote_not_found", f"no message {str(quote.message)[:12]!r} was shown")
        text, folded = fold(message.content), fold(quote.quote).strip(_EDGE)
        if len(folded) < MIN_QUOTE_CHARS:
            return Verdict("quote_not_found", f"quote in {message.label} too short")
        start = find(folded, text)
        if start is None:
            return Verdict("quote_not_found", f"quote not in {message.label}")
        spans.append((message, text, start, start + len(folded)))
    return spans


def find(quote: str, text: str) -> int | None:
    """Where the folded `quote` starts in the folded `text`, at word boundaries."""
    start = text.find(quote)
    while start >= 0:
        end = start + len(quote)
        if not (_joins(text, start - 1, quote[0]) or _joins(text, end, quote[-1])):
            return start
        start = text.find(quote, start + 1)
    return None


def _joins(text: str, at: int, edge: str) -> bool:
    """Would the quote's edge character run on into text[at] (half a word quoted)?"""
    if not 0 <= at < len(text):
        return False
    return _wordlike(edge) and _wordlike(text[at])


def _wordlike(char: str) -> bool:
    return char.isalnum() and not CJK.match(char)


# The label at the start of a citation: models copy more of the message's line head
# than the label ("m3 user" from "m3 user [2024-05-08]: ..."; Qwen 1.5B did so for
# 19 of 22 facts on the adversarial set).
_LABEL = re.compile(r"[\s\[(#]*([ma])\s*(\d+)(?!\d)", re.IGNORECASE)


def _message(shown: Mapping[str, Shown], label: object) -> Shown | None:
    """The message a cited label names; "M3", " m3 ", "[m3]" and "m3 user" name m3."""
    if not isinstance(label, str):
        return None
    found = _LABEL.match(label)
    return shown.get(label) or (shown.get(f"{found[1].lower()}{found[2]}") if found else None)


def _earlier(shown: Mapping[str, Shown], message: Shown) -> Iterator[str]:
    """The user's folded messages shown before `message`, oldest first."""
    position = _order(message.label)
    return _users(shown, lambda at: at < position)


def _users(shown: Mapping[str, Shown], where: Callable[[int], bool]) -> Iterator[str]:
    """The user's folded messages whose position `where` accepts, oldest first."""
    chosen = sorted((m for m in shown.values() if m.role == "user" and where(_order(m.label))),
                    key=lambda m: _order(m.label))
    return (fold(m.content) for m in chosen)


def _order(label: str) -> int:
    digits = "".join(ch for ch in label if ch.isdigit())
    return int(digits) if digits else -1
