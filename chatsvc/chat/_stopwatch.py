"""Per-step seconds of a turn (the Server-Timing header and the chat benchmark)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Stopwatch:
    """`with clock("name"):` sets timings["name"] to the block's seconds."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = time.perf_counter() - started
