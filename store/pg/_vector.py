"""pgvector values: vectors travel as their text form and are cast with `::vector`."""

from __future__ import annotations

from collections.abc import Sequence


def literal(vector: Sequence[float], dim: int) -> str:
    if len(vector) != dim:
        raise ValueError(f"expected a {dim}-d vector, got {len(vector)}-d")
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
