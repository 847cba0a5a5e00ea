"""Why a request missed the cache: the first layer whose bytes changed, and where.

Consecutive upstream request bodies of one conversation are compared byte for
byte (their linear form, see evals.cache.prompt). When the previous request is a
prefix of the new one nothing was lost: no miss. Otherwise the first differing
byte falls in a layer of the previous request, and that layer names the cause,
unless the previous layer only starts there while the new request's layer started
earlier and goes on: then content was appended to the new one (a memory written
at the end of the memory section, say), and that layer is the cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from evals.cache.prompt import Prompt

CAUSES = {
    "fact_sheet": "fact sheet regenerated",
    "memory": "memory write",
    "date": "date rollover",
    "message_context": "per-message block",
    "history": "history trim",
    "system": "system prompt changed",
    "recent_conversations": "recent conversations changed",
    "docs": "pinned documents changed",
    "instructions": "client instructions changed",
    "current": "current message changed",
}


@dataclass(frozen=True)
class Miss:
    cause: str
    layer: str  # the layer that changed (see the module doc)
    new_layer: str | None  # what the new request has at that offset
    byte_offset: int  # into the linear prompt
    layer_offset: int  # bytes into that layer

    def as_json(self) -> dict:
        return {"cause": self.cause, "layer": self.layer, "new_layer": self.new_layer,
                "byte_offset": self.byte_offset, "layer_offset": self.layer_offset}


def first_difference(a: bytes, b: bytes) -> int | None:
    """Offset of the first differing byte; None when `a` is a prefix of `b`."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return None if len(a) <= len(b) else n
    low, high = 0, n  # binary search on equal prefixes: bytes compare in C
    while low < high:
        middle = (low + high) // 2
        if a[: middle + 1] == b[: middle + 1]:
            low = middle + 1
        else:
            high = middle
    return low


def attribute(previous: Prompt, current: Prompt) -> Miss | None:
    offset = first_difference(previous.data, current.data)
    if offset is None:
        return None
    segment = next(s for s in previous.segments if s.start <= offset < s.end)
    grown = next((s for s in current.segments if s.start < offset < s.end), None)
    if segment.start == offset and grown is not None:
        segment = grown
    return Miss(
        cause=CAUSES.get(segment.layer, segment.layer),
        layer=segment.layer,
        new_layer=current.layer_at(offset),
        byte_offset=offset,
        layer_offset=offset - segment.start,
    )
