"""Which of an answer's new facts may be stored: each is verified against the messages
the request showed (`_verify`), and its evidence resolved to stored message ids.

Pure: no I/O. A rejected fact is counted by reason and logged at debug level without
the user's words (the fact's length and the verifier's short detail only).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field

from chatsvc.extraction._prompt import Extraction, Request
from chatsvc.extraction._verify import REASONS, Shown, verify
from store.facts import Evidence

log = logging.getLogger("chatsvc.extraction")

# "Forget that I live in Lyon", "stop remembering ...", "忘掉我住在里昂": a `forget` in the
# answer is honoured only when one of the user's own messages asks for it, so an answer
# cannot erase memory on its own (nor can text the assistant wrote).
_FORGET = re.compile(
    r"\b(forget|forgot|stop remembering|don'?t remember|do not remember|delete|remove|erase)"
    r"\b|忘[掉记了]|别记|不要记|删[掉除]", re.IGNORECASE)


@dataclass(frozen=True)
class Grounded:
    """A verified new fact: what to store and the quotes it rests on."""

    category: str
    fact: str
    evidence: tuple[Evidence, ...]


@dataclass
class Checked:
    facts: list[Grounded] = field(default_factory=list)
    # index into the answer's new_facts -> index into `facts` (verified ones only)
    positions: dict[int, int] = field(default_factory=dict)
    rejected: Counter = field(default_factory=Counter)
    forget: list[str] = field(default_factory=list)  # refs, when the user asked
    forget_asked_in: str | None = None  # the id of the (last) user message that asked


def check(extraction: Extraction, request: Request, *, ignore_words: frozenset[str]) -> Checked:
    shown = {label: Shown(label, message.role, request.shown.get(label, ""),
                          message.created_at)
             for label in request.shown if (message := request.message(label))}
    checked = Checked()
    for index, proposed in enumerate(extraction.new_facts):
        verdict = verify(proposed.fact, proposed.evidence, shown, ignore_words=ignore_words)
        if verdict.reason is not None:
            checked.rejected[verdict.reason] += 1
            log.debug("fact extraction: rejected a fact (%d characters): %s %s",
                      len(proposed.fact), verdict.reason, verdict.detail)
            continue
        evidence = tuple(_evidence(request, quote.message, quote.quote)
                         for quote in proposed.evidence)
        checked.positions[index] = len(checked.facts)
        checked.facts.append(Grounded(proposed.category, proposed.fact, evidence))
    asked = _forget_request(request) if extraction.forget else None
    if asked is not None:
        checked.forget, checked.forget_asked_in = extraction.forget, asked
    return checked


def rejected_counts(counter: Counter) -> dict[str, int]:
    """Every reason, zero included, in the documented order."""
    return {reason: counter.get(reason, 0) for reason in REASONS}


def _evidence(request: Request, label: str, quote: str) -> Evidence:
    message = request.message(label)
    assert message is not None  # verified: the label names a user message of the request
    return Evidence(message.id, message.conversation_id, " ".join(quote.split()),
                    message.created_at)


def _forget_request(request: Request) -> str | None:
    """The id of the batch's last user message that asks to forget, if any."""
    asking = [message.id for n, message in enumerate(request.messages, 1)
              if message.role == "user" and _FORGET.search(request.shown.get(f"m{n}", ""))]
    return asking[-1] if asking else None
