"""Tool calls in a streamed answer: the fragments as sent, and the whole calls.

OpenAI streams each call in pieces under `delta.tool_calls`: a first fragment with
the call's `index`, `id`, `type` and function `name`, then fragments with only the
`index` and the next part of the `arguments` string. /v1 relays the fragments as
they came; the server-side tool loop needs the assembled calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCallDelta:
    """The `delta.tool_calls` list of one upstream chunk, exactly as sent."""

    fragments: list[dict]


def _text(value) -> str:
    return value if isinstance(value, str) else ""


class ToolCalls:
    """Whole calls, assembled by index from the fragments in the order they came."""

    def __init__(self) -> None:
        self._calls: dict[int, dict] = {}

    def add(self, delta: ToolCallDelta) -> list[dict]:
        """Add the fragments; returns them as OpenAI sends them. llama.cpp repeats a
        call's `id`, `type` and `name` in every fragment: such a repeat (its call's id
        again) adds no name, and is returned without them, since clients append names."""
        shaped = []
        for fragment in delta.fragments:
            index = fragment.get("index")
            if isinstance(index, bool) or not isinstance(index, int):
                index = len(self._calls)  # a provider that omits the index: one call each
            call = self._calls.setdefault(index, {
                "id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            if call["id"] and fragment.get("id") == call["id"]:
                fragment = _without_header(fragment)
            call["id"] = _text(fragment.get("id")) or call["id"]
            function = fragment.get("function")
            if isinstance(function, dict):
                call["function"]["name"] += _text(function.get("name"))
                call["function"]["arguments"] += _text(function.get("arguments"))
            shaped.append(fragment)
        return shaped

    def calls(self) -> list[dict]:
        """OpenAI's assistant `tool_calls`, in index order."""
        return [self._calls[index] for index in sorted(self._calls)]


def _without_header(fragment: dict) -> dict:
    rest = {key: value for key, value in fragment.items() if key not in ("id", "type")}
    if isinstance(fragment.get("function"), dict):
        rest["function"] = {key: value for key, value in fragment["function"].items()
                            if key != "name"}
    return rest


def cut_short(calls: list[dict]) -> bool:
    """Whether a call's arguments stop before their JSON ends: the answer ran out of tokens.
    llama.cpp's server says "tool_calls" for such an answer, where OpenAI says "length".
    Raw line breaks in a string pass (Gemma 270M writes them); empty arguments pass too."""
    for call in calls:
        arguments = call["function"]["arguments"]
        try:
            if arguments.strip():
                json.loads(arguments, strict=False)
        except ValueError:
            return True
    return False
