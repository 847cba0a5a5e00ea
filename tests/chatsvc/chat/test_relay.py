"""Relay.stop (the server shuts down): the answer ends at once, as `shutdown`."""

from __future__ import annotations

import time

import anyio

from chatsvc.chat import Limits, Relay
from chatsvc.llm import LLM
from chatsvc.testing import Reply

MESSAGES = [{"role": "user", "content": "tell me a long story"}]


def test_stop_cuts_a_waiting_read_and_keeps_what_was_said(upstream, upstream_settings):
    upstream.script(Reply(chunks=["once ", "upon ", "a time"], chunk_delay=2.0))
    saved = []

    async def save(outcome) -> None:
        saved.append(outcome)

    async def main() -> tuple[list[str], float]:
        relay = Relay(LLM(upstream_settings), MESSAGES, limits=Limits(30, 30), on_finish=save)
        said, first = [], anyio.Event()
        stopped_at = 0.0

        async def shut_down() -> None:
            nonlocal stopped_at
            await first.wait()
            await anyio.sleep(0.3)  # the relay now waits on a read (next piece in 2 s)
            stopped_at = time.monotonic()
            relay.stop()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(shut_down)
            async for pieces in relay.events():
                said.extend(pieces)
                first.set()
        return said, time.monotonic() - stopped_at

    said, seconds = anyio.run(main)
    assert said == ["once "]
    assert seconds < 1.5  # the upstream closed within CLOSE_TIMEOUT_SECONDS, no waiting
    (outcome,) = saved
    assert (outcome.status, outcome.content, outcome.error_code) == (
        "interrupted", "once ", "shutdown")
