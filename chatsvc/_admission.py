"""Per-user stream slots: one user's token cannot take every upstream connection.

A slot is held from a chat request's admission to the end of its answer (the last
byte of a stream; a resumable answer's end, which may come after its client left).
The count lives in this process: with `--workers N` a user may
run N x CHATSVC_MAX_STREAMS_PER_USER turns at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

from litestar.types import ASGIApp, Receive, Scope, Send

from chatsvc._errors import TooManyStreams


class StreamSlots:
    def __init__(self, per_user: int) -> None:
        self.per_user = per_user
        self._held: Counter[str] = Counter()  # one event loop: no lock needed

    def take(self, user_id: str) -> Slot:
        """A slot for `user_id`, or TooManyStreams when all of theirs are held."""
        if self._held[user_id] >= self.per_user:
            raise TooManyStreams(self.per_user)
        self._held[user_id] += 1
        return Slot(self, user_id)

    def held(self, user_id: str) -> int:
        return self._held[user_id]

    def _give_back(self, user_id: str) -> None:
        self._held[user_id] -= 1
        if not self._held[user_id]:
            del self._held[user_id]


class Slot:
    """`with slots.take(user) as slot:` gives the slot back on leaving the block,
    unless `keep_for` handed it to the response that streams the answer."""

    def __init__(self, slots: StreamSlots, user_id: str) -> None:
        self._slots, self._user_id = slots, user_id
        self._held = True
        self._kept = False

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots._give_back(self._user_id)

    def keep_for(
        self, app: ASGIApp, then: Callable[[], Awaitable[None]] | None = None
    ) -> ASGIApp:
        """`app`, holding the slot until it has run (however it ends), then `then()`.
        Litestar runs the app a handler returns, so the slot cannot leak."""
        self._kept = True

        async def run(scope: Scope, receive: Receive, send: Send) -> None:
            try:
                await app(scope, receive, send)
            finally:
                self.release()
                if then is not None:
                    await then()

        return run

    def hand_over(self) -> Callable[[], None]:
        """Hand the slot to work that outlives the request (a resumable answer): it
        holds the slot until it calls the returned release."""
        self._kept = True
        return self.release

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self._kept:
            self.release()
