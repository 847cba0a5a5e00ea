"""The `not_a_statement` rule measured on the adversarial conversations (and, as a
Chinese check of the support rule that LoCoMo cannot give, their facts crossed).

Quotes are cut from each user line as an extractor would cite them: the whole line,
each sentence, and what follows a colon ("Remember this: ..."). A quote is judged
with itself as the fact and no coverage floor, so only the statement rule (and the
privilege check) can reject it.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from chatsvc.extraction import Quote, Shown, verify

ADVERSARIAL = Path(__file__).with_name("adversarial.jsonl")
# Kinds whose user lines state nothing about the user: every quote should be rejected.
NON_STATEMENTS = ("question", "hypothetical", "roleplay", "injection", "sarcasm", "forget",
                  "request")
# Kinds whose user lines are real statements: no quote may be rejected.
STATEMENTS = ("plain", "third_party", "correction")
_SENTENCE = re.compile(r"(?<=[.!?。！？;；])\s*")


def load(path: Path = ADVERSARIAL) -> list[dict]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def shown(conversation: dict) -> dict[str, Shown]:
    return {f"m{i}": Shown(f"m{i}", m["role"], m["content"])
            for i, m in enumerate(conversation["messages"], start=1)}


def quotes(content: str) -> list[str]:
    """The whole line, its sentences and the part after a colon, each once."""
    parts = [content, *_SENTENCE.split(content)]
    parts += [p.split(":", 1)[1] for p in list(parts) if ":" in p]
    parts += [p.split("：", 1)[1] for p in list(parts) if "：" in p]
    cleaned = [p.strip() for p in parts]
    return list(dict.fromkeys(p for p in cleaned if len(p) >= 3))


def _rejected(conversation: dict, label: str, quote: str) -> str | None:
    verdict = verify(quote, [Quote(label, quote)], shown(conversation), min_coverage=0.0)
    return verdict.detail if verdict.reason == "not_a_statement" else None


def measure(path: Path = ADVERSARIAL) -> dict:
    conversations = load(path)
    by_kind: dict[str, Counter] = defaultdict(Counter)
    missed, wrongly = [], []
    for conversation in conversations:
        kind = conversation["kind"]
        for label, message in shown(conversation).items():
            if message.role != "user":
                continue
            for quote in quotes(message.content):
                why = _rejected(conversation, label, quote)
                by_kind[kind]["quotes"] += 1
                by_kind[kind]["rejected"] += why is not None
                if kind in NON_STATEMENTS and why is None:
                    missed.append(f"{conversation['id']}: {quote}")
                if kind in STATEMENTS and why is not None:
                    wrongly.append(f"{conversation['id']}: {quote} ({why})")
    return {"conversations": len(conversations),
            "by_language": dict(Counter(c["lang"] for c in conversations)),
            "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
            "non_statement_quotes": _share(by_kind, NON_STATEMENTS),
            "statement_quotes": _share(by_kind, STATEMENTS),
            "missed": missed, "wrongly_rejected": wrongly,
            "supported_facts": _supported(conversations),
            "assistant_quotes": _assistant(conversations),
            "cross_pairs": cross_pairs(conversations)}


def cross_pairs(conversations: list[dict]) -> dict:
    """Each supported fact against the user-line quotes of every other conversation of
    its language: a false pair the verifier should reject (a true duplicate, such as
    "I live in Lyon." in two conversations, may pass)."""
    found: dict[str, Counter] = defaultdict(Counter)
    for fact_from in conversations:
        for fact in fact_from["supported"]:
            for other in conversations:
                if other is fact_from or other["lang"] != fact_from["lang"]:
                    continue
                messages = shown(other)
                for label, message in messages.items():
                    for quote in quotes(message.content) if message.role == "user" else ():
                        verdict = verify(fact, [Quote(label, quote)], messages)
                        found[fact_from["lang"]][str(verdict.reason)] += 1
    return {lang: dict(counts) for lang, counts in sorted(found.items())}


def _share(by_kind: dict[str, Counter], kinds: tuple[str, ...]) -> dict:
    quotes_ = sum(by_kind[k]["quotes"] for k in kinds)
    rejected = sum(by_kind[k]["rejected"] for k in kinds)
    return {"quotes": quotes_, "rejected": rejected,
            "rejected_share": round(rejected / quotes_, 4) if quotes_ else None}


def _supported(conversations: list[dict]) -> dict:
    """Each supported fact: kept when some quote of a user line verifies it in full."""
    kept, lost = 0, []
    for conversation in conversations:
        messages = shown(conversation)
        for fact in conversation["supported"]:
            verdicts = [verify(fact, [Quote(label, quote)], messages).reason
                        for label, message in messages.items() if message.role == "user"
                        for quote in quotes(message.content)]
            if None in verdicts:
                kept += 1
            else:
                lost.append(f"{conversation['id']}: {fact} ({Counter(verdicts)})")
    return {"facts": kept + len(lost), "kept": kept, "lost": lost}


def _assistant(conversations: list[dict]) -> dict:
    """Quotes of the assistant's lines, each cited as the fact's evidence."""
    reasons = Counter()
    for conversation in conversations:
        messages = shown(conversation)
        for label, message in messages.items():
            if message.role == "assistant":
                for quote in quotes(message.content):
                    reasons[verify(quote, [Quote(label, quote)], messages).reason] += 1
    return {str(k): v for k, v in reasons.items()}
