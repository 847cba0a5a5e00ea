"""pgvector values: vectors travel as their text form and are cast with `::vector`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def literal(vector: Sequence[float], dim: int) -> str:
    """'[x, y, ...]' (pgvector's input syntax); float32, as stored, formats fastest."""
    if len(vector) != dim:
        raise ValueError(f"expected a {dim}-d vector, got {len(vector)}-d")
    return str(np.asarray(vector, dtype=np.float32).tolist())
