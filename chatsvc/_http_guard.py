"""uvicorn's httptools protocol with a bound on request heads, before any auth runs.

httptools buffers a header of any size and uvicorn waits forever for a request's
head or body: one unauthenticated client could hold memory and connections. Here a
head larger than `h11_max_incomplete_event_size` bytes gets a 431 and the connection
closed, and a connection that takes longer than `timeout_keep_alive` seconds to send
a head, or stalls that long inside a body, is closed (chatsvc serve sets both from
CHATSVC_MAX_HEADER_BYTES and CHATSVC_HEADER_TIMEOUT).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

_TOO_LARGE = b"request header too large"


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.max_head_bytes = self.config.h11_max_incomplete_event_size
        self.head_bytes: int | None = 0  # None: the head is complete, a body may follow
        self.tail = b""  # the last bytes seen, for a head end split between two reads
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.head_bytes is None:
            self._arm()  # inside a body: the timeout is per stall, not for the whole body
        else:
            self.head_bytes += _head_part(self.tail, data)
            self.tail = (self.tail + data)[-3:]
            if self.max_head_bytes is not None and self.head_bytes > self.max_head_bytes:
                self._refuse()
                return
            if self.deadline is None:
                self._arm()  # the first byte of a request on a kept-alive connection
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self.head_bytes = None
        self._arm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.head_bytes, self.tail = 0, b""
        self._disarm()  # the answer may take long; uvicorn's keep-alive timer follows it
        super().on_message_complete()

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(self.timeout_keep_alive, self._expire)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _expire(self) -> None:
        self.deadline = None
        if self.flow.read_paused:
            self._arm()  # the app has not consumed the body yet: the stall is ours
        elif not self.transport.is_closing():
            self.transport.close()

    def _refuse(self) -> None:
        self._disarm()
        self.transport.write(STATUS_LINE[431] + b"content-type: text/plain\r\nconnection: close"
                             b"\r\ncontent-length: " + str(len(_TOO_LARGE)).encode()
                             + b"\r\n\r\n" + _TOO_LARGE)
        self.transport.close()


def _head_part(tail: bytes, data: bytes) -> int:
    """How many bytes of `data` belong to the request head: all of them until the blank
    line that ends it (which may start in `tail`, the previous read's last bytes). A
    body arriving in the same read as the head does not count."""
    end = (tail + data).find(b"\r\n\r\n")
    return len(data) if end < 0 else max(0, end + 4 - len(tail))
