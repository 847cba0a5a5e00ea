"""Relay one upstream answer and always record how it ended.

`Relay.events()` yields the upstream's pieces (text, and tool-call fragments as
sent), as lists of what arrived together (one item while the relay keeps up;
several when it is behind, so they can go out in one write). With `tools` (the
server runs them) an answer that calls tools is followed by the calls' ToolEvents
and another upstream request with their results, for at most `tools.rounds`
rounds; the last one lets the model call none. Each wait has its limit (see
_limits: the first token of each request, the gap to the next one, a tool call's
step; a total deadline only for answers that are not streamed). However the
iteration ends (done, upstream failure, a limit, the consumer cancelled because the
client went away, or closed early), the upstream response is closed within a
second, a log line names how an answer that did not simply stop ended, and
`on_finish` gets the outcome, shielded from cancellation so the partial answer is
saved even while the request is being torn down. A limit reached after some text
cuts the answer (finish reason `timeout`, the text kept); before any, it is an
error `timeout`. `stop()` (the server is shutting down, or a user asked: POST
/api/conversations/{id}/stop) ends it early, between two reads or in the middle of
one, as `interrupted` with the code `shutdown` (or `stopped`), so the client can be
told.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import anyio

from chatsvc import metrics
from chatsvc._errors import UpstreamError, UpstreamIncomplete
from chatsvc.chat._limits import FIRST_TOKEN, STALL, Limits, WaitedTooLong
from chatsvc.chat._tool_loop import ToolEvent, ToolRunner, run_round
from chatsvc.llm import (
    CLOSE_TIMEOUT_SECONDS,
    LLM,
    Finish,
    Piece,
    ToolCalls,
    Usage,
    cut_short,
    usage_or_estimate,
)
from context import Message

log = logging.getLogger("chatsvc.chat")

SHUTDOWN_MESSAGE = "the server is shutting down; send the message again"
# Why an answer was stopped early: (error code, message), as the client is told.
SHUTDOWN = ("shutdown", SHUTDOWN_MESSAGE)
STOPPED_BY_USER = ("stopped", "the answer was stopped on request")
STOPPED = object()  # what a read cut short by stop() returns


def _code(exc: UpstreamError, parts: list[str]) -> str:
    if isinstance(exc, UpstreamIncomplete):
        return "upstream_incomplete"
    return "upstream_error" if parts else "upstream_unavailable"


@dataclass(frozen=True)
class Outcome:
    status: str  # "complete" | "interrupted" | "error"
    content: str
    finish_reason: str | None = None
    usage: Usage | None = None
    error_code: str | None = None
    error_message: str | None = None
    tool_calls: list[dict] = field(default_factory=list)  # assembled, when it made any
    # With server-side tools: the messages after the question as sent upstream (calls,
    # results, the answer), to store with the turn and replay; [] when no tool ran.
    exchange: list[dict] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        """It ends as an answer (`done`): complete, or cut by a limit after some text."""
        return self.status == "complete" or (self.finish_reason == "timeout"
                                             and bool(self.content))


class Relay:
    def __init__(
        self, llm: LLM, messages: list[dict], *, limits: Limits,
        on_finish: Callable[[Outcome], Awaitable[None]] | None = None,
        model: str | None = None, options: dict | None = None,
        mode: str = "rag", received_at: float | None = None, tools: ToolRunner | None = None,
    ) -> None:
        self.llm = llm
        self.tools = tools
        self.exchange: list[dict] = []  # this turn's tool calls and results, as sent
        self.messages = messages
        self.limits = limits
        self.on_finish = on_finish
        self.model = model
        self.options = options or {}
        self.outcome: Outcome | None = None
        self.started_at: float | None = None  # perf_counter when the upstream call began
        self.stopping: tuple[str, str] | None = None  # why it was stopped early
        self._reading: anyio.CancelScope | None = None  # the read in progress, if any
        self._ended = False  # the current round's upstream answer ended (not stopped)
        self._finish = Finish(None, None)  # and how
        # For metrics: the turn's retrieval mode, when its request was taken (perf_counter,
        # if known) and when the first answer token came.
        self.mode = mode
        self.received_at = received_at
        self.first_token_at: float | None = None

    def stop(self, reason: tuple[str, str] = SHUTDOWN) -> None:
        """End the answer now: the read in progress is cancelled."""
        self.stopping = self.stopping or reason
        if self._reading is not None:
            self._reading.cancel()

    async def events(self) -> AsyncIterator[list[Piece | ToolEvent]]:
        parts: list[str] = []
        deadline = self.limits.deadline()
        self.started_at = time.perf_counter()
        usage: Usage | None = None
        uncounted: int | None = None  # where the text of a round not in `usage` starts
        metrics.stream_started()
        try:
            for round_ in range(self._rounds() + 1):
                said, calls = len(parts), ToolCalls()
                uncounted = said
                async with aclosing(self._round(round_, deadline)) as pieces:
                    async for event in pieces:
                        for piece in event:
                            if isinstance(piece, str):
                                parts.append(piece)
                            else:
                                calls.add(piece)
                        self.first_token_at = self.first_token_at or time.perf_counter()
                        yield event
                usage, uncounted = self._add_usage(usage, "".join(parts[said:])), None
                if not self._ended or round_ == self._rounds() or not calls.calls():
                    break
                running = self._run_tools(calls.calls(), parts[said:], deadline)
                async with aclosing(running) as tool_events:
                    async for tool_event in tool_events:
                        yield [tool_event]
            self.outcome = self._outcome(parts, "".join(parts[said:]), calls, usage)
        except UpstreamError as exc:
            self.outcome = Outcome("error", "".join(parts), error_code=_code(exc, parts),
                                   error_message=f"the language model failed: {exc}")
        except WaitedTooLong as exc:
            if uncounted is not None:
                usage = self._add_usage(usage, "".join(parts[uncounted:]))
            self.outcome = _cut(exc, "".join(parts), usage)
        except BaseException:  # cancelled or closed: the client went away
            self.outcome = Outcome("interrupted", "".join(parts))
            raise
        finally:
            metrics.turn_finished(self)
            self._log_end()
            if self.on_finish is not None and self.outcome is not None:
                with anyio.CancelScope(shield=True):
                    await self.on_finish(self.outcome)

    def _rounds(self) -> int:
        return self.tools.rounds if self.tools is not None else 0

    def _round_options(self, round_: int) -> dict:
        """The request's options. The last round offers the same tools (the cached
        prompt stays the same) but lets the model call none, so the turn ends with an
        answer."""
        options = {**self.options, "timeout": self.limits.http_timeout}
        if self.tools is None:
            return options
        choice = "auto" if round_ < self.tools.rounds else "none"
        return {**options, "tools": self.tools.schemas, "tool_choice": choice}

    async def _next(self, events: AsyncIterator, cause: str, deadline: float | None):
        """The next of `events` (None after the last), STOPPED when stop() cut the wait;
        raises WaitedTooLong past the limit of `cause` (or the answer's deadline). The
        limit wraps each read, never a yield: a cancel scope must not stay open across
        the consumer's code."""
        seconds, limit = self.limits.wait(cause, deadline)
        event = STOPPED
        with anyio.CancelScope() as self._reading, anyio.move_on_after(seconds) as waiting:
            event = await anext(events, None)
        self._reading = None
        if waiting.cancelled_caught:
            raise self.limits.exceeded(limit)
        return event

    async def _round(self, round_: int, deadline: float | None) -> AsyncIterator[list[Piece]]:
        """One upstream completion; sets _ended (it ended, not stopped) and _finish."""
        self._ended, self._finish = False, Finish(None, None)
        upstream = self.llm.stream([*self.messages, *self.exchange], model=self.model,
                                   **self._round_options(round_))
        cause = FIRST_TOKEN
        try:
            while not self.stopping:
                event = await self._next(upstream, cause, deadline)
                cause = STALL
                self._ended = event is None
                if self._ended or event is STOPPED:
                    return
                if isinstance(event, Finish):
                    self._finish = event
                    continue
                yield event
        finally:
            with anyio.move_on_after(CLOSE_TIMEOUT_SECONDS, shield=True):
                await upstream.aclose()

    async def _run_tools(self, calls: list[dict], said: list[str],
                         deadline: float | None) -> AsyncIterator[ToolEvent]:
        """The round's tool events; each step has the stall limit (the client hears
        nothing meanwhile) and stop() ends it."""
        events = run_round(self.tools, "".join(said), calls, self.exchange)
        async with aclosing(events) as running:
            while not self.stopping:
                event = await self._next(running, STALL, deadline)
                if event is None or event is STOPPED:
                    return
                yield event

    def _add_usage(self, usage: Usage | None, said: str) -> Usage:
        """The turn's usage so far: every round's request counts."""
        this = usage_or_estimate(self._finish.usage, [*self.messages, *self.exchange], said,
                                 tokenizer=self.llm.tokenizer)
        return this if usage is None else usage.plus(this)

    def _outcome(self, parts: list[str], last: str, calls: ToolCalls,
                 usage: Usage | None) -> Outcome:
        """`parts`: all the text said; `last`: the last round's (the answer upstream)."""
        content = "".join(parts)
        if not self._ended:
            code, message = self.stopping or SHUTDOWN
            return Outcome("interrupted", content, error_code=code, error_message=message)
        if self.tools is None:  # the client runs the tools (/v1): it gets the calls
            made, finish = calls.calls(), self._finish.finish_reason
            if finish == "tool_calls" and cut_short(made):
                finish = "length"
            return Outcome("complete", content, finish, usage, tool_calls=made)
        exchange = [*self.exchange, Message("assistant", last).wire()] if self.exchange else []
        return Outcome("complete", content, self._finish.finish_reason, usage,
                       exchange=exchange)

    def _log_end(self) -> None:
        """A line naming why an answer did not simply stop (it was cut, or failed)."""
        outcome = self.outcome
        if outcome is None or outcome.finish_reason in ("stop", "tool_calls"):
            return
        model, kept = self.model or self.llm.model, len(outcome.content)
        if outcome.status == "complete":
            cap = self.options.get("max_tokens")
            log.info("answer of %s ended with finish_reason %s%s (%d characters)", model,
                     outcome.finish_reason, f" (max_tokens {cap})" if cap else "", kept)
        elif outcome.error_code is None:
            log.info("answer of %s cut: the client went away (%d characters kept)", model, kept)
        else:
            level = logging.INFO if outcome.error_code in ("stopped", "shutdown") \
                else logging.WARNING
            log.log(level, "answer of %s ended early (%s): %s (%d characters kept)", model,
                    outcome.error_code, outcome.error_message, kept)


def _cut(exc: WaitedTooLong, content: str, usage: Usage | None) -> Outcome:
    """A limit reached: an answer cut short when some text came, else an error."""
    if not content:
        return Outcome("error", "", "timeout", error_code="timeout",
                       error_message=exc.describe())
    return Outcome("interrupted", content, "timeout", usage, error_code="timeout",
                   error_message=f"{exc.describe()}; the answer was cut there")
