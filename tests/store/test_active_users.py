"""The users a start-up warm-up loads: those with a recent turn, most recent first."""

from __future__ import annotations

from datetime import timedelta

from store.clock import utc_now


def test_active_users_are_those_with_a_turn_since_most_recent_first(stores):
    alice = stores.users.add("alice")[0].id
    bob = stores.users.add("bob")[0].id
    stores.users.add("carol")  # never had a turn
    conversation, question = stores.chats.start_turn(alice, "first")
    stores.chats.end_turn(alice, conversation.id, question.id)
    stores.chats.start_turn(bob, "second")
    hour_ago = utc_now() - timedelta(hours=1)
    assert stores.chats.active_users(since=hour_ago, limit=10) == [bob, alice]
    stores.chats.start_turn(alice, "third", conversation_id=conversation.id)
    assert stores.chats.active_users(since=hour_ago, limit=10) == [alice, bob]
    assert stores.chats.active_users(since=hour_ago, limit=1) == [alice]
    assert stores.chats.active_users(since=utc_now() + timedelta(hours=1), limit=10) == []
