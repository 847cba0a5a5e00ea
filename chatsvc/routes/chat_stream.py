"""Re-attach to a conversation's streamed turn, and stop it, from any worker or replica.

`GET /api/conversations/{id}/stream` replays the recorded events (store.turn_events)
after the client's last id and follows the turn by polling the database every
POLL_SECONDS until its `done` or `error`. `POST .../stop` marks the running turn;
the process running it notices within a tick of its journal and stores the partial
answer `interrupted`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from litestar import Request, Response, Router, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery
from litestar.types import ASGIApp
from sse_starlette import ServerSentEvent

from chatsvc._settings import Settings
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.routes import _validate as check
from chatsvc.routes._openapi import StreamingOperation
from chatsvc.routes.chat import event_stream, joined
from store import ChatStore, NotFound, TurnEventStore
from store.turn_events import TERMINAL, TurnState

POLL_SECONDS = 0.1
# A turn frees its conversation when its answer is saved, just before its last events
# are appended: a follower that sees it free waits this long for them.
END_GRACE_SECONDS = 2.0
STOP_WAIT_SECONDS = 5.0  # how long POST .../stop waits for the partial answer's save


def _last_id(header: str | None, query: str | None) -> int:
    raw = header if header is not None else query
    if raw is None or raw == "":
        return 0
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:  # int() reads "١" too
        raise check.bad("Last-Event-ID", "must be an event id (a whole number)")
    return int(raw)


async def _follow(turn_events: TurnEventStore, user_id: str, conversation_id: str,
                  state: TurnState, after: int, stopping: anyio.Event) -> AsyncIterator[bytes]:
    """`state`'s events, then each new batch, up to the turn's last event."""
    quiet_since = None
    while not stopping.is_set():
        if state.events:
            ending = next((i for i, e in enumerate(state.events) if e.event in TERMINAL), None)
            batch = state.events if ending is None else state.events[:ending + 1]
            yield joined([ServerSentEvent(id=str(e.seq), event=e.event, data=e.data)
                          for e in batch])
            if ending is not None:
                return
            after, quiet_since = batch[-1].seq, None
        elif not state.running:
            quiet_since = quiet_since or anyio.current_time()
            if anyio.current_time() - quiet_since > END_GRACE_SECONDS:
                return  # its process died before its last events
        await anyio.sleep(POLL_SECONDS)
        try:
            state = await in_thread(turn_events.after, user_id, conversation_id, after,
                                    state.turn_id)
        except NotFound:  # deleted meanwhile
            return


@get("/conversations/{conversation_id:str}/stream", summary="Re-attach to the answer",
     status_code=200, operation_class=StreamingOperation)
async def follow_turn(
    request: Request, settings: NamedDependency[Settings],
    turn_events: NamedDependency[TurnEventStore], conversation_id: FromPath[str],
    last_event_id: FromQuery[str | None] = None,
) -> ASGIApp:
    after = _last_id(request.headers.get("last-event-id"), last_event_id)
    state = await in_thread(turn_events.after, request.user.id, conversation_id, after)
    if not state.running and not state.events:
        return Response(None, status_code=204)
    stopping = anyio.Event()
    return event_stream(settings, _follow(turn_events, request.user.id, conversation_id,
                                          state, after, stopping), on_shutdown=stopping.set)


@post("/conversations/{conversation_id:str}/stop", summary="Stop the running answer",
      status_code=200)
async def stop_turn(
    request: Request, chats: NamedDependency[ChatStore],
    turn_events: NamedDependency[TurnEventStore], conversation_id: FromPath[str],
) -> Response:
    user_id = request.user.id
    turn_id = await in_thread_shielded(turn_events.request_stop, user_id, conversation_id)
    if turn_id is None:
        return Response(None, status_code=204)
    deadline = anyio.current_time() + STOP_WAIT_SECONDS
    while await in_thread(turn_events.running, conversation_id, turn_id):
        if anyio.current_time() > deadline:
            return Response({"conversation_id": conversation_id, "status": "stopping"},
                            status_code=202)
        await anyio.sleep(POLL_SECONDS)
    messages = await in_thread(chats.messages, user_id, conversation_id)
    # The newest answer to the turn's question: a regenerated one has older siblings.
    answer = next((m for m in reversed(messages) if m.reply_to == turn_id), None)
    return Response({"conversation_id": conversation_id,
                     "message_id": answer.id if answer else None,
                     "status": answer.status if answer else None})


router = Router(path="/api", route_handlers=[follow_turn, stop_turn], tags=["chat"])
