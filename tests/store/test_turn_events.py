"""A streamed turn's recorded events and the stop marker, on both backends: replay after
an id, one turn kept per conversation, retention, ownership, the marker's life."""

from __future__ import annotations

import time

import pytest

from store import AssistantReply, NotFound
from store import turn_events as module


@pytest.fixture
def alice_turn(stores, users):
    alice, _ = users.add("alice")
    conversation, question = stores.chats.start_turn(alice.id, "hello", reply_id="r1")
    return alice, conversation, question


def rows(*kinds: str, start: int = 1) -> list[tuple[int, str, str]]:
    return [(start + i, kind, f'{{"n": {start + i}}}') for i, kind in enumerate(kinds)]


def test_events_after_an_id_in_order(stores, alice_turn):
    alice, conversation, question = alice_turn
    events = stores.turn_events
    assert events.append(conversation.id, question.id, rows("meta", "delta")) is False
    events.append(conversation.id, question.id, rows("delta", "done", start=3))
    state = events.after(alice.id, conversation.id, 2)
    assert state.turn_id == question.id and state.running
    assert [(e.seq, e.event, e.data) for e in state.events] == [
        (3, "delta", '{"n": 3}'), (4, "done", '{"n": 4}')]
    assert [e.seq for e in events.after(alice.id, conversation.id, 0).events] == [1, 2, 3, 4]


def test_another_users_conversation_is_not_found_and_unchanged(stores, users, alice_turn):
    _, conversation, question = alice_turn
    bob, _ = users.add("bob")
    stores.turn_events.append(conversation.id, question.id, rows("meta"))
    with pytest.raises(NotFound):
        stores.turn_events.after(bob.id, conversation.id, 0)
    with pytest.raises(NotFound):
        stores.turn_events.request_stop(bob.id, conversation.id)
    assert stores.turn_events.append(conversation.id, question.id, []) is False


def test_the_next_turn_drops_the_previous_turns_events(stores, alice_turn):
    alice, conversation, question = alice_turn
    stores.turn_events.append(conversation.id, question.id, rows("meta", "done"))
    stores.chats.end_turn(alice.id, conversation.id, question.id)
    state = stores.turn_events.after(alice.id, conversation.id, 0)
    assert not state.running and len(state.events) == 2  # kept after the turn ended
    _, second = stores.chats.start_turn(alice.id, "again", conversation_id=conversation.id)
    state = stores.turn_events.after(alice.id, conversation.id, 0)
    assert state.turn_id == second.id and state.running and state.events == []


def test_old_turns_are_forgotten(stores, alice_turn, monkeypatch):
    alice, conversation, question = alice_turn
    stores.turn_events.append(conversation.id, question.id, rows("meta", "done"))
    assert stores.turn_events.forget_old() == 0
    monkeypatch.setattr(module, "RETAIN_SECONDS", 0.0)
    time.sleep(0.01)
    assert stores.turn_events.forget_old() == 2
    assert stores.turn_events.after(alice.id, conversation.id, 0).events == []


def test_events_of_a_deleted_conversation_are_not_stored(stores, alice_turn):
    alice, conversation, question = alice_turn
    stores.chats.delete(alice.id, conversation.id)
    assert stores.turn_events.append(conversation.id, question.id, rows("delta")) is False
    assert stores.turn_events.db.scalar("SELECT count(*) FROM turn_events") == 0


def test_the_stop_marker_names_the_running_turn_until_it_ends(stores, alice_turn):
    alice, conversation, question = alice_turn
    events = stores.turn_events
    assert events.request_stop(alice.id, conversation.id) == question.id
    assert events.append(conversation.id, question.id, []) is True
    assert events.running(conversation.id, question.id)
    stores.chats.finish_turn(alice.id, conversation.id, AssistantReply(
        id="r1", content="part", status="interrupted", mode="rag", prefix_hash="h",
        usage=None, cached_tokens=None, question_id=question.id))
    assert not events.running(conversation.id, question.id)
    assert events.request_stop(alice.id, conversation.id) is None  # nothing runs
    _, second = stores.chats.start_turn(alice.id, "again", conversation_id=conversation.id)
    assert events.append(conversation.id, second.id, []) is False  # the marker was cleared
