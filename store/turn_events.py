"""The events of streamed turns, for clients that re-attach, and the stop marker.

A streamed turn appends its SSE events (`seq` = the SSE id, from 1 within the turn)
in batches as the answer streams; any process reads them back after a client's last
id (`after`). A conversation keeps one turn's events: `Chats.start_turn` deletes the
previous turn's, and `forget_old` those whose last event is older than
RETAIN_SECONDS. `request_stop` marks the running turn (`conversations.turn_stop`);
the turn reads the marker when it appends its next batch, in whichever process it
runs. Every user-facing read is scoped by user id: another user's conversation is
NotFound, like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from store._errors import NotFound
from store.clock import iso, now_iso, utc_now
from store.contract import Database

# How long a turn's events stay readable after its last one (unless the next turn of
# the conversation starts first): a client reloading the page well after the answer
# ended still gets it; the stored message has it for good.
RETAIN_SECONDS = 600.0
TERMINAL = ("done", "error")  # the events that end a turn's stream


@dataclass(frozen=True)
class TurnEvent:
    seq: int
    event: str
    data: str  # the SSE data line as sent (JSON)


@dataclass(frozen=True)
class TurnState:
    """What a re-attaching client can follow: the turn whose events are kept (or which
    runs), whether it still holds the conversation, its events after the asked id."""

    turn_id: str | None
    running: bool
    events: list[TurnEvent]


class TurnEvents:
    def __init__(self, db: Database) -> None:
        self.db = db

    def append(self, conversation_id: str, turn_id: str,
               events: list[tuple[int, str, str]]) -> bool:
        """Store `(seq, event, data)` rows of a turn in one transaction (nothing when the
        conversation is gone); True when the turn was asked to stop. With no rows only the
        marker is read: no write lock is taken."""
        if events:
            now = now_iso()
            with self.db.transaction():
                self.db.executemany(
                    "INSERT INTO turn_events(turn_id, seq, conversation_id, event, data, "
                    "created_at) SELECT $turn, $seq, id, $event, $data, $now "
                    "FROM conversations WHERE id = $conversation",
                    [{"turn": turn_id, "seq": seq, "event": event, "data": data, "now": now,
                      "conversation": conversation_id} for seq, event, data in events],
                )
        stop = self.db.scalar("SELECT turn_stop FROM conversations WHERE id = $id",
                              {"id": conversation_id})
        return stop == turn_id

    def forget_old(self) -> int:
        """Delete the events of turns whose last event is older than RETAIN_SECONDS."""
        cutoff = iso(utc_now() - timedelta(seconds=RETAIN_SECONDS))
        with self.db.transaction():
            return self.db.execute(
                "DELETE FROM turn_events WHERE turn_id IN (SELECT turn_id FROM turn_events "
                "GROUP BY turn_id HAVING max(created_at) < $cutoff)", {"cutoff": cutoff},
            ).rowcount

    def after(self, user_id: str, conversation_id: str, after: int,
              turn_id: str | None = None) -> TurnState:
        """The kept (or running) turn's events with seq > `after`; `turn_id` pins the turn
        a client already follows. NotFound unless the conversation is the user's."""
        with self.db.snapshot():
            running_turn = self._running_turn(user_id, conversation_id)
            kept = self.db.scalar(
                "SELECT turn_id FROM turn_events WHERE conversation_id = $id LIMIT 1",
                {"id": conversation_id})
            turn_id = turn_id or kept or running_turn
            rows = self.db.execute(
                "SELECT seq, event, data FROM turn_events WHERE turn_id = $turn "
                "AND conversation_id = $id AND seq > $after ORDER BY seq",
                {"turn": turn_id, "id": conversation_id, "after": after},
            ).fetchall()
        events = [TurnEvent(row["seq"], row["event"], row["data"]) for row in rows]
        return TurnState(turn_id, turn_id is not None and turn_id == running_turn, events)

    def request_stop(self, user_id: str, conversation_id: str) -> str | None:
        """Mark the running turn to stop; its id, or None when none runs."""
        with self.db.transaction():
            turn_id = self._running_turn(user_id, conversation_id)
            if turn_id is not None:
                self.db.execute("UPDATE conversations SET turn_stop = turn_id "
                                "WHERE id = $id AND turn_id = $turn",
                                {"id": conversation_id, "turn": turn_id})
        return turn_id

    def running(self, conversation_id: str, turn_id: str) -> bool:
        """Whether `turn_id` still holds the conversation."""
        return self.db.scalar(
            "SELECT count(*) FROM conversations WHERE id = $id AND turn_id = $turn "
            "AND turn_until >= $now", {"id": conversation_id, "turn": turn_id, "now": now_iso()},
        ) > 0

    def _running_turn(self, user_id: str, conversation_id: str) -> str | None:
        """The id of the turn holding the user's conversation, if any; NotFound unless
        the conversation is theirs."""
        row = self.db.execute(
            "SELECT turn_id, turn_until FROM conversations WHERE id = $id AND user_id = $user",
            {"id": conversation_id, "user": user_id},
        ).fetchone()
        if row is None:
            raise NotFound(f"no conversation {conversation_id}")
        held = row["turn_id"] is not None and row["turn_until"] >= now_iso()
        return row["turn_id"] if held else None
