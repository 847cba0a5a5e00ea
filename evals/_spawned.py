"""Stand-ins (an Ollama, a scripted upstream) in a process of their own, as the real
services are: in the benchmark's process their threads would share its interpreter lock."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def spawned(target: Callable, *args) -> Iterator[tuple[object, int]]:
    """Runs `target(*args, sent, stop)` in a spawned process, which puts what the caller
    needs (its URLs) on the queue `sent` and serves until the event `stop` is set; yields
    (what it sent, its pid)."""
    context = multiprocessing.get_context("spawn")
    sent, stop = context.Queue(), context.Event()
    process = context.Process(target=target, args=(*args, sent, stop), daemon=True)
    process.start()
    try:
        yield sent.get(timeout=60), process.pid
    finally:
        stop.set()
        process.join(10)
