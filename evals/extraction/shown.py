"""The messages an extraction request shows the LLM, read back from its prompt.

Grounded extraction labels each line `m3 user [2023-05-08]: text`; the code before it
wrote `user: text`. Both are read (a line without a label gets m1, m2, ... in order), so
the scripted answers can be built against either version of the service.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^(?:([ma]\d+) )?(user|assistant|system|tool)\b[^:\n]*: ", re.MULTILINE)
_CONVERSATION = "Conversation:"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


@dataclass(frozen=True)
class Shown:
    label: str  # what an answer cites: "m3"
    role: str
    text: str

    @property
    def is_question(self) -> bool:
        return self.text.rstrip().endswith(("?", "？"))

    def sentences(self) -> list[str]:
        return [s.strip() for s in _SENTENCE_END.split(self.text) if s.strip()]


def is_extraction(body: dict) -> bool:
    """Whether a chat completion request is fact extraction (not a dedup or a chat turn)."""
    return "new_facts" in prompt_text(body)


def prompt_text(body: dict) -> str:
    messages = body.get("messages") or []
    first = messages[0].get("content") if messages else ""
    return first if isinstance(first, str) else ""


def shown_messages(prompt: str) -> list[Shown]:
    """The conversation's messages in the prompt, in order (after its last
    "Conversation:" heading when there is one; a message runs to the next one)."""
    start = prompt.rfind(_CONVERSATION)
    body = prompt[start + len(_CONVERSATION):] if start >= 0 else prompt
    found = list(_LINE.finditer(body))
    shown = []
    for n, match in enumerate(found):
        end = found[n + 1].start() if n + 1 < len(found) else len(body)
        label = match[1] or f"m{n + 1}"
        shown.append(Shown(label, match[2], body[match.end():end].strip()))
    return shown
