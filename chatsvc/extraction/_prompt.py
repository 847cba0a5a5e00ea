"""The extraction request and its answer: pure functions, no I/O.

Known facts go to the LLM under short refs (f1, f2, ...) rather than 32-character
ids: fewer tokens and fewer mangled ids; messages likewise under labels (m1, m2, ...),
which each new fact's evidence cites with the exact words it rests on
(`chatsvc.extraction._verify` checks them). The request is cut to a token budget:
known facts take at most half of it, messages fill the rest in order, and a
message too long to fit alone is truncated (its tail is not extracted).
"""

from __future__ import annotations

from dataclasses import dataclass

import prompts
from chatsvc.extraction._verify import Quote
from chatsvc.llm import MalformedReply, json_object
from context.tokens import Tokenizer
from store.extraction import PendingMessage
from store.facts import CATEGORIES

MESSAGE_OVERHEAD = 4  # role and framing tokens per chat message, as providers count them


@dataclass(frozen=True)
class KnownFact:
    ref: str
    id: str
    category: str
    fact: str


@dataclass(frozen=True)
class Request:
    chat: list[dict[str, str]]
    messages: list[PendingMessage]  # the messages this request covers; m1 = messages[0]
    tokens: int
    shown: dict[str, str]  # label -> the text the request showed (a cut message's head)

    def message(self, label: str) -> PendingMessage | None:
        """The message behind a label such as "m3" or "a2", None for one the request
        lacks (a user label on an assistant's message included)."""
        if label[:1] not in ("m", "a") or not label[1:].isdigit():
            return None
        index = int(label[1:]) - 1
        if not 0 <= index < len(self.messages):
            return None
        message = self.messages[index]
        return message if label_of(index + 1, message.role) == label else None


@dataclass(frozen=True)
class NewFact:
    category: str
    fact: str
    evidence: tuple[Quote, ...]  # as the LLM gave it, not yet verified


@dataclass(frozen=True)
class Extraction:
    new_facts: list[NewFact]
    referenced: list[str]  # refs
    superseded: list[tuple[str, int]]  # (old ref, index into new_facts)
    forget: list[str]  # refs the user asked to forget


# The answer's shape as a JSON schema, for servers that constrain output to one
# (llama.cpp: response_format {"type": "json_object", "schema": ...}). The bounds keep
# a small model from looping until max_tokens and cutting the JSON short.
REPLY_SCHEMA = {
    "type": "object",
    "properties": {
        "new_facts": {"type": "array", "maxItems": 12, "items": {
            "type": "object",
            "properties": {
                "category": {"enum": list(CATEGORIES)},
                "fact": {"type": "string", "maxLength": 160},
                "evidence": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
                    "type": "object",
                    "properties": {"message": {"type": "string", "pattern": "^m[0-9]{1,4}$"},
                                   "quote": {"type": "string", "maxLength": 300}},
                    "required": ["message", "quote"]}}},
            "required": ["category", "fact", "evidence"]}},
        "referenced": {"type": "array", "maxItems": 40,
                       "items": {"type": "string", "maxLength": 8}},
        "superseded": {"type": "array", "maxItems": 12, "items": {
            "type": "object",
            "properties": {"old_id": {"type": "string", "maxLength": 8},
                           "new_index": {"type": "integer"}},
            "required": ["old_id", "new_index"]}},
        "forget": {"type": "array", "maxItems": 12,
                   "items": {"type": "string", "maxLength": 8}},
    },
    "required": ["new_facts", "referenced", "superseded", "forget"],
}


def chat_tokens(chat: list[dict[str, str]], tokenizer: Tokenizer) -> int:
    return sum(tokenizer.count(m["content"]) + MESSAGE_OVERHEAD for m in chat)


def _fill(template: str, **values: str) -> str:
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", value)
    return template


def _take_lines(lines: list[str], budget: int, tokenizer: Tokenizer) -> list[str]:
    taken, used = [], 0
    for line in lines:
        cost = tokenizer.count(line) + 1
        if used + cost > budget:
            break
        taken.append(line)
        used += cost
    return taken


def build_request(
    known: list[KnownFact], pending: list[PendingMessage], *, budget: int, tokenizer: Tokenizer
) -> Request:
    """The request for the longest prefix of `pending` (at least one message) that fits.

    One user message holds instructions and data: some chat templates (Gemma's)
    drop system messages."""
    template = prompts.load("fact_extraction")
    free = budget - chat_tokens([{"content": _fill(template, known_facts="", conversation="")}],
                                tokenizer)
    fact_lines = [f"{k.ref} [{k.category}] {k.fact}" for k in known]
    known_text = "\n".join(_take_lines(fact_lines, free // 2, tokenizer)) or "(none)"
    free -= tokenizer.count(known_text) + 1
    lines = [message_line(n, m) for n, m in enumerate(pending, 1)]
    taken = _take_lines(lines, free, tokenizer)
    if not taken:  # the first message alone is too long: keep its head
        taken = [tokenizer.truncate(lines[0], free)]

    def render(conversation: list[str]) -> list[dict[str, str]]:
        text = _fill(template, known_facts=known_text, conversation="\n".join(conversation))
        return [{"role": "user", "content": text}]

    chat = render(taken)
    # Per-line counts can differ from the joined text by a token or two: re-check.
    while (over := chat_tokens(chat, tokenizer) - budget) > 0:
        if len(taken) > 1:
            taken.pop()
        elif not taken[0]:
            raise ValueError(f"an extraction budget of {budget} tokens cannot fit the prompt")
        else:
            taken = [tokenizer.truncate(taken[0], tokenizer.count(taken[0]) - over)]
        chat = render(taken)
    shown = {label_of(n, message.role): line.split(": ", 1)[1] if ": " in line else ""
             for n, (line, message) in enumerate(zip(taken, pending, strict=False), 1)}
    return Request(chat, pending[: len(taken)], chat_tokens(chat, tokenizer), shown)


def label_of(number: int, role: str) -> str:
    """The user's messages are m1, m3, ..., the others a2, ... (one sequence): a JSON
    schema that allows only m labels (REPLY_SCHEMA) keeps a constrained model from
    citing the assistant's words at all (the bundled Qwen cited the assistant's echo of
    the user's sentence, which the verifier refuses as not_user)."""
    return f"{'m' if role == 'user' else 'a'}{number}"


def message_line(number: int, message: PendingMessage) -> str:
    """`m3 user [2024-05-08]: text`: the label evidence cites, who spoke and the day
    (so "yesterday" can be read), then the text exactly as stored."""
    return (f"{label_of(number, message.role)} {message.role} [{message.created_at[:10]}]: "
            f"{message.content}")


def repair_chat(request: Request, bad_reply: str, error: str) -> list[dict[str, str]]:
    """The original request, the unusable answer and a note saying what was wrong."""
    note = _fill(prompts.load("fact_extraction_repair"), error=error)
    return [*request.chat, {"role": "assistant", "content": bad_reply},
            {"role": "user", "content": note}]


def repair_overhead(tokenizer: Tokenizer) -> int:
    """Tokens the repair note adds besides the echoed answer (with room for the error)."""
    note = tokenizer.count(prompts.load("fact_extraction_repair"))
    return note + 2 * MESSAGE_OVERHEAD + 64


def parse_reply(text: str, known_refs: set[str]) -> Extraction:
    """The extraction in `text`. Wrong structure raises MalformedReply; single items
    that make no sense (unknown category or ref, bad index) are dropped. A fact without
    evidence is kept with none: verification rejects (and counts) it."""
    data = json_object(text)
    new_facts = [_new_fact(item) for item in _list(data, "new_facts")]
    new_facts = [item for item in new_facts if item is not None]
    referenced = [ref for ref in map(_ref, _list(data, "referenced")) if ref in known_refs]
    forget = [ref for ref in map(_ref, _list(data, "forget")) if ref in known_refs]
    superseded = []
    for item in _list(data, "superseded"):
        if not isinstance(item, dict):
            raise MalformedReply("superseded must hold objects with old_id and new_index")
        old, index = _ref(item.get("old_id")), item.get("new_index")
        if old in known_refs and isinstance(index, int) and 0 <= index < len(new_facts):
            superseded.append((old, index))
    return Extraction(new_facts, list(dict.fromkeys(referenced)), superseded,
                      list(dict.fromkeys(forget)))


def _list(data: dict, key: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise MalformedReply(f"{key} must be a list")
    return value


def _new_fact(item) -> NewFact | None:
    if not isinstance(item, dict):
        raise MalformedReply("new_facts must hold objects with category, fact and evidence")
    category, fact = item.get("category"), item.get("fact")
    if not isinstance(category, str) or not isinstance(fact, str):
        return None
    category, fact = category.strip().lower(), " ".join(fact.split())
    has_word = any(ch.isalnum() for ch in fact)  # not "..." copied from the shape
    if category not in CATEGORIES or not has_word:
        return None
    return NewFact(category, fact, _evidence(item.get("evidence")))


def _evidence(value) -> tuple[Quote, ...]:
    """The well-formed quotes of a fact's evidence (others are as good as none)."""
    items = value if isinstance(value, list) else []
    return tuple(Quote(_ref(e.get("message")) or "", e["quote"]) for e in items
                 if isinstance(e, dict) and isinstance(e.get("quote"), str))


def _ref(value) -> str | None:
    return value.strip().lower() if isinstance(value, str) else None
