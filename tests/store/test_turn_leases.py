"""Turn leases on both backends: a turn's claim on its conversation lasts while its
process renews it, lapses once it stops, never outlives the turn's hold, and is freed
at once when its process is known dead. A negative length is one that ran out
already (no sleeping in tests)."""

from __future__ import annotations

import pytest

from store import AssistantReply, Chats, TurnInProgress, TurnLease, Users

LAPSED = -1.0


@pytest.fixture
def claims(open_db):
    """(Chats, alice's id) on both backends."""
    db = open_db()
    return Chats(db), Users(db).add("alice")[0].id


def accepts_a_turn(chats: Chats, user: str, conversation: str) -> bool:
    try:
        chats.start_turn(user, "next", conversation_id=conversation,
                         lease=TurnLease("someone else", 60))
    except TurnInProgress:
        return False
    return True


def test_a_claim_lasts_while_its_owner_renews_it(claims):
    chats, alice = claims
    conversation, _ = chats.start_turn(alice, "q", lease=TurnLease("a", LAPSED))
    # Its process renews it (it still runs the turn): held again, by no one else's renewal.
    assert chats.renew_turns("b", lease_seconds=60) == 0
    assert chats.renew_turns("a", lease_seconds=60) == 1
    assert not accepts_a_turn(chats, alice, conversation.id)
    # The renewals stop (its process died): the conversation takes the next turn.
    chats.renew_turns("a", lease_seconds=LAPSED)
    assert accepts_a_turn(chats, alice, conversation.id)
    # The new turn is the new owner's: the old process renews nothing any more.
    assert chats.renew_turns("a", lease_seconds=60) == 0


def test_a_renewal_never_carries_a_claim_past_the_turns_hold(claims):
    chats, alice = claims
    held, _ = chats.start_turn(alice, "q", hold_seconds=60, lease=TurnLease("a", 5))
    over, _ = chats.start_turn(alice, "q", hold_seconds=LAPSED, lease=TurnLease("a", 60))
    assert chats.renew_turns("a", lease_seconds=3600) == 1  # not the one past its hold
    assert accepts_a_turn(chats, alice, over.id)
    row = chats.db.execute(
        "SELECT turn_until, turn_deadline FROM conversations WHERE id = $id",
        {"id": held.id}).fetchone()
    assert row["turn_until"] == row["turn_deadline"]  # an hour asked, the hold's minute given


def test_a_dead_owners_claims_are_freed_and_its_question_kept(claims):
    chats, alice = claims
    dead, question = chats.start_turn(alice, "asked before the crash", reply_id="r1",
                                      lease=TurnLease("dead", 60))
    alive, _ = chats.start_turn(alice, "still answering", lease=TurnLease("alive", 60))
    assert chats.free_turns_of("dead") == 1
    assert accepts_a_turn(chats, alice, dead.id)
    assert not accepts_a_turn(chats, alice, alive.id)  # a live sibling keeps its own
    assert chats.interrupt_pending() == 1
    stored = chats.messages(alice, dead.id)
    assert [(m.role, m.content, m.status) for m in stored] == [
        ("user", "asked before the crash", "complete"), ("assistant", "", "interrupted"),
        ("user", "next", "complete")]
    # The dead turn's late answer (it was not dead after all) frees nothing of the next.
    chats.finish_turn(alice, dead.id, AssistantReply(
        id="r1", content="late", status="complete", mode="normal", prefix_hash="h",
        usage=None, cached_tokens=None, question_id=question.id))
    assert not accepts_a_turn(chats, alice, dead.id)


def test_a_claim_without_a_lease_holds_for_the_whole_hold(claims):
    """What callers without a renewing process get (and claims made before leases)."""
    chats, alice = claims
    conversation, _ = chats.start_turn(alice, "q")
    assert chats.renew_turns("anyone", lease_seconds=LAPSED) == 0
    assert chats.free_turns_of("anyone") == 0
    assert not accepts_a_turn(chats, alice, conversation.id)
