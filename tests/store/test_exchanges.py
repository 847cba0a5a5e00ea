"""/v1 exchanges as conversation turns: only what is new is stored, retries add nothing,
a named conversation stays its user's."""

from __future__ import annotations

import pytest

from store import NotFound
from store.exchanges import Answer, Said, chain_of


def _answer(text: str) -> Answer:
    return Answer(text, "rag", "p" * 64, {"prompt_tokens": 3, "completion_tokens": 1}, None)


def _turn(stores, user_id, said, answer=None, *, key=None):
    recorded = stores.exchanges.record_question(user_id, said, key=key)
    if answer is not None and recorded.answer_wanted:
        stores.exchanges.record_answer(user_id, recorded, said, _answer(answer))
    return recorded


def _stored(stores, user_id, conversation_id):
    return [(m.role, m.content) for m in stores.chats.messages(user_id, conversation_id)]


@pytest.fixture
def alice(stores):
    return stores.users.add("alice")[0].id


U1, A1, U2 = Said("user", "I keep bees."), Said("assistant", "Nice."), Said("user", "How many?")


def test_the_chain_frames_each_text():
    assert chain_of([Said("user", "a\nb")]) != chain_of([Said("user", "a"), Said("user", "b")])
    assert chain_of([U1, A1])[0] == chain_of([U1])[0]


def test_a_conversation_grows_by_what_is_new_and_a_retry_adds_nothing(stores, alice):
    first = _turn(stores, alice, [U1], "Nice.")
    for _ in range(3):  # retries of the first request
        again = _turn(stores, alice, [U1], "Nice, again.")
        assert again.conversation.id == first.conversation.id and not again.answer_wanted
    second = _turn(stores, alice, [U1, A1, U2], "Three hives.")
    _turn(stores, alice, [U1, A1, U2], "Three hives.")
    assert second.conversation.id == first.conversation.id
    assert _stored(stores, alice, first.conversation.id) == [
        ("user", "I keep bees."), ("assistant", "Nice."), ("user", "How many?"),
        ("assistant", "Three hives.")]
    assert stores.chats.count(alice) == 1


def test_a_question_stored_without_its_answer_gets_it_on_the_retry(stores, alice):
    failed = _turn(stores, alice, [U1])  # the upstream failed: the question stays
    retry = _turn(stores, alice, [U1], "Nice.")
    assert retry.question_id == failed.question_id and retry.answer_wanted
    assert _stored(stores, alice, failed.conversation.id) == [("user", U1.content),
                                                              ("assistant", "Nice.")]


def test_an_unnamed_fork_starts_a_conversation_of_its_own(stores, alice):
    first = _turn(stores, alice, [U1], "Nice.")
    stores.chats.set_snapshot(alice, first.conversation.id, '{"pinned": 1}')
    _turn(stores, alice, [U1, A1, U2], "Three.")
    fork = _turn(stores, alice, [U1, A1, Said("user", "Which kind?")], "Italian.")
    assert fork.conversation.id != first.conversation.id
    assert fork.conversation.snapshot == '{"pinned": 1}'  # its cached prefix goes on
    assert _stored(stores, alice, fork.conversation.id)[-2:] == [
        ("user", "Which kind?"), ("assistant", "Italian.")]


def test_a_named_conversation_takes_every_new_message(stores, alice):
    first = _turn(stores, alice, [U1], "Nice.", key="chat-1")
    edited = [U1, A1, Said("user", "Edited.")]
    _turn(stores, alice, [U1, A1, U2], "Three.", key="chat-1")
    again = _turn(stores, alice, edited, "Edited answer.", key="chat-1")
    assert again.conversation.id == first.conversation.id
    assert [c for _, c in _stored(stores, alice, first.conversation.id)][-2:] == [
        "Edited.", "Edited answer."]
    other = _turn(stores, alice, [U1], "Nice.", key="chat-2")  # same words, another chat
    assert other.conversation.id != first.conversation.id and other.answer_wanted


def test_a_name_is_its_users_only(stores, alice):
    bob = stores.users.add("bob")[0].id
    mine = _turn(stores, alice, [U1], "Nice.", key="shared-name")
    theirs = _turn(stores, bob, [U1], "Hello bob.", key="shared-name")
    assert theirs.conversation.id != mine.conversation.id
    assert _stored(stores, alice, mine.conversation.id) == [("user", U1.content),
                                                            ("assistant", "Nice.")]
    with pytest.raises(NotFound):
        stores.chats.messages(bob, mine.conversation.id)
    # bob's earlier messages never match a prefix of alice's request either.
    assert _turn(stores, bob, [U1, A1, U2]).conversation.id != mine.conversation.id


def test_an_answer_to_a_deleted_conversation_is_not_found(stores, alice):
    recorded = _turn(stores, alice, [U1])
    stores.chats.delete(alice, recorded.conversation.id)
    with pytest.raises(NotFound):
        stores.exchanges.record_answer(alice, recorded, [U1], _answer("late"))
