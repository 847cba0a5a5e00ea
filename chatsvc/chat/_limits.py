"""How long a relayed answer may wait for the upstream, and why a wait ended.

A streamed answer that keeps coming is never cut by a total deadline: a CPU model
can need minutes for 512 tokens. It is cut when the first token of an upstream
request does not come within `first_token` seconds (the prompt's prefill, and a
turn queued behind another on a one-request-at-a-time llama.cpp server), or when
no token follows the last within `stall` seconds. An answer nobody sees while it is
generated (`stream: false`) also has `total`, LLM_TIMEOUT: its client waits for
the whole of it (evals/results/stream_limits.md has the figures the defaults
come from).
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from chatsvc._settings import Settings

# Why a wait ended: the first token of a request, the next one, the whole answer.
FIRST_TOKEN, STALL, TOTAL = "first_token", "stall", "total"
HTTP_MARGIN_SECONDS = 5.0
SETTING = {FIRST_TOKEN: "LLM_FIRST_TOKEN_TIMEOUT", STALL: "LLM_STALL_TIMEOUT",
           TOTAL: "LLM_TIMEOUT"}


class WaitedTooLong(Exception):
    def __init__(self, cause: str, seconds: float) -> None:
        super().__init__(cause)
        self.cause = cause
        self.seconds = seconds

    def describe(self) -> str:
        waited = {FIRST_TOKEN: "sent no first token within",
                  STALL: "sent nothing more for",
                  TOTAL: "gave no complete answer within"}[self.cause]
        return f"the language model {waited} {self.seconds:g} s ({SETTING[self.cause]})"


@dataclass(frozen=True)
class Limits:
    first_token: float
    stall: float
    total: float | None = None  # None: streamed, no total deadline

    @classmethod
    def of(cls, settings: Settings, *, streaming: bool) -> Limits:
        return cls(settings.llm_first_token_timeout_seconds, settings.llm_stall_timeout_seconds,
                   None if streaming else settings.llm_timeout_seconds)

    @property
    def http_timeout(self) -> float:
        """For the upstream request's own reads: longer than any wait here, so that
        these limits end a wait (the client's default, LLM_TIMEOUT, would end a slow
        prefill first, and retry it)."""
        return max(self.first_token, self.stall) + HTTP_MARGIN_SECONDS

    def deadline(self) -> float | None:
        """When the whole answer must be done (anyio's clock), if ever."""
        return None if self.total is None else anyio.current_time() + self.total

    def exceeded(self, cause: str) -> WaitedTooLong:
        seconds = {FIRST_TOKEN: self.first_token, STALL: self.stall, TOTAL: self.total}[cause]
        return WaitedTooLong(cause, seconds)

    def wait(self, cause: str, deadline: float | None) -> tuple[float, str]:
        """How long the next wait may last, and what ends it: `cause`'s limit
        (FIRST_TOKEN or STALL), or the whole answer's deadline when that comes first."""
        seconds = self.first_token if cause == FIRST_TOKEN else self.stall
        if deadline is not None and deadline - anyio.current_time() < seconds:
            return max(0.0, deadline - anyio.current_time()), TOTAL
        return seconds, cause
