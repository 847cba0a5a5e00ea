"""`: ping` only after CHATSVC_SSE_PING seconds without an event, never between the
events of a steady answer (IdlePingResponse run as the ASGI app it is)."""

from __future__ import annotations

import anyio
from sse_starlette import ServerSentEvent

from chatsvc.routes._idle_ping import IdlePingResponse

PING = b": ping\r\n\r\n"


def _written(events, ping: float) -> list[bytes]:
    """The body chunks the response sends for `events()`, pings included."""
    bodies: list[bytes] = []

    async def send(message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            bodies.append(message["body"])

    async def receive():  # the client stays connected
        await anyio.sleep_forever()

    async def main() -> None:
        response = IdlePingResponse(
            events(), ping=ping, ping_message_factory=lambda: ServerSentEvent(comment="ping"))
        await response({"type": "http", "method": "POST", "headers": []}, receive, send)

    anyio.run(main)
    return bodies


def test_a_steady_stream_gets_no_ping():
    ping = 0.4

    async def steady():
        for i in range(20):  # 1 s in all, an event every eighth of the interval
            await anyio.sleep(ping / 8)
            yield ServerSentEvent(data=str(i), event="delta")

    bodies = _written(steady, ping)
    assert PING not in bodies and len(bodies) == 20


def test_a_quiet_stream_gets_pings_after_the_interval():
    ping = 0.1

    async def quiet():
        yield ServerSentEvent(data="first", event="delta")
        await anyio.sleep(ping * 4)
        yield ServerSentEvent(data="late", event="delta")

    bodies = _written(quiet, ping)
    assert bodies[0].startswith(b"event: delta") and bodies[-1].startswith(b"event: delta")
    assert 1 <= bodies.count(PING) <= 4 and set(bodies[1:-1]) == {PING}
