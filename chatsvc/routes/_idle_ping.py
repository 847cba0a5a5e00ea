"""An SSE response that pings only when the stream has been quiet.

sse-starlette's ping task sends a comment every `ping` seconds whatever else is
sent, so a long answer carried `: ping` lines between its deltas. A ping is there
to keep a quiet connection open through proxies: here it goes out only after
`ping` seconds without any write. This overrides two of sse-starlette's private
methods (tests/chatsvc/chat/test_idle_ping.py checks the behaviour, so a change
in sse-starlette shows there).
"""

from __future__ import annotations

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.event import ensure_bytes
from starlette.types import Message, Send


class IdlePingResponse(EventSourceResponse):
    _last_write: float | None = None  # anyio's clock, when something was last sent

    async def _send_with_timeout(self, send: Send, message: Message) -> None:
        await super()._send_with_timeout(send, message)
        self._last_write = anyio.current_time()

    async def _ping(self, send: Send) -> None:
        quiet_since = anyio.current_time()
        while self.active:
            quiet_since = self._last_write or quiet_since
            wait = quiet_since + self.ping_interval - anyio.current_time()
            if wait > 0:
                await anyio.sleep(wait)
                continue
            factory = self.ping_message_factory or (lambda: ServerSentEvent(comment="ping"))
            ping = ensure_bytes(factory(), self.sep)
            async with self._send_lock:
                if self.active:
                    await self._send_with_timeout(
                        send, {"type": "http.response.body", "body": ping, "more_body": True})
