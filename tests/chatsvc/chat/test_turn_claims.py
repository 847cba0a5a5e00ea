"""This process's claims on its turns' conversations (TurnClaims, real SQLite): a turn
that outlasts its lease many times over keeps its conversation, and a start frees the
claims of its data dir's dead processes, never a live sibling's or another replica's."""

from __future__ import annotations

import anyio
import pytest

from chatsvc._instance import MARKS, presence
from chatsvc.chat import TurnClaims
from store import Chats, SqliteDatabase, TurnInProgress, TurnLease, Users

# Short, with room for a renewal delayed by a loaded machine (as the job leases' test).
LEASE_SECONDS = 1.0


@pytest.fixture
def chats(tmp_path):
    db = SqliteDatabase(tmp_path / "chats.db", embed_model="m", embed_dim=4)
    yield Chats(db)
    db.close()


@pytest.fixture
def alice(chats):
    return Users(chats.db).add("alice")[0].id


def accepts_a_turn(chats: Chats, user: str, conversation: str) -> bool:
    try:
        chats.start_turn(user, "next", conversation_id=conversation,
                         lease=TurnLease("another process", 60))
    except TurnInProgress:
        return False
    return True


def test_a_turn_outlasting_its_lease_keeps_its_conversation(chats, alice, tmp_path):
    claims = TurnClaims(chats, tmp_path, lease_seconds=LEASE_SECONDS)
    refusals = []

    async def turn_running_for_four_leases() -> None:
        async with claims.kept():
            conversation, _ = chats.start_turn(alice, "q", lease=claims.lease)
            for _ in range(16):
                await anyio.sleep(LEASE_SECONDS / 4)
                refusals.append(not accepts_a_turn(chats, alice, conversation.id))

    anyio.run(turn_running_for_four_leases)
    assert refusals == [True] * 16


def test_a_start_frees_only_what_its_data_dirs_dead_processes_held(chats, alice, tmp_path):
    marks = tmp_path / MARKS
    marks.mkdir()
    (marks / "x.owner").write_text("dead")  # what a killed process leaves: no lock on it
    held = {owner: chats.start_turn(alice, "q", lease=TurnLease(owner, 60))[0].id
            for owner in ("dead", "live sibling", "another replica")}
    claims = TurnClaims(chats, tmp_path, lease_seconds=60)

    async def start() -> None:
        async with claims.kept():
            pass

    with presence(tmp_path, "live sibling"):
        anyio.run(start)
        left = sorted(mark.read_text() for mark in marks.iterdir())
    accepted = {owner: accepts_a_turn(chats, alice, conversation)
                for owner, conversation in held.items()}
    assert accepted == {"dead": True, "live sibling": False, "another replica": False}
    assert left == ["live sibling"]  # the dead one's mark went with its claims
