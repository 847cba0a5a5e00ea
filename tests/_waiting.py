"""Waiting in tests for what a server does in the background."""

from __future__ import annotations

import time


def wait_for(predicate, timeout: float = 10.0):
    """predicate()'s first truthy result, polled every 20 ms; fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
    return result
