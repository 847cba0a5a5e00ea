"""Conversations and messages: ownership, the two writes of a turn, recent titles."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from store import (
    AssistantReply,
    Chats,
    NotFound,
    SqliteDatabase,
    StoreError,
    TurnInProgress,
    Users,
)
from store.chats import title_for


@pytest.fixture
def db(tmp_path):
    database = SqliteDatabase(tmp_path / "x.db", embed_model="m", embed_dim=4)
    yield database
    database.close()


@pytest.fixture
def chats(db):
    return Chats(db)


@pytest.fixture
def alice(db):
    return Users(db).add("alice")[0].id


@pytest.fixture
def bob(db):
    return Users(db).add("bob")[0].id


def reply(reply_id="r1", content="hi", status="complete", question_id=None):
    return AssistantReply(id=reply_id, content=content, status=status, mode="rag",
                          prefix_hash="h", usage={"prompt_tokens": 3}, cached_tokens=None,
                          question_id=question_id)


def test_a_turn_stores_the_question_then_the_answer(chats, alice):
    conversation, question = chats.start_turn(alice, "Hello   there\nfriend", project_id="p",
                                              reply_id="r1")
    assert conversation.title == "Hello there friend" and conversation.project_id == "p"
    assert question.role == "user" and question.status == "complete"
    chats.finish_turn(alice, conversation.id,
                      reply(content="partial", status="interrupted", question_id=question.id))
    stored = chats.messages(alice, conversation.id)
    assert [(m.role, m.content, m.status) for m in stored] == [
        ("user", "Hello   there\nfriend", "complete"), ("assistant", "partial", "interrupted")]
    assert stored[1].usage == {"prompt_tokens": 3} and stored[1].cached_tokens is None
    assert stored[1].prefix_hash == "h" and stored[1].mode == "rag"
    _, again = chats.start_turn(alice, "next", conversation_id=conversation.id)
    assert [m.id for m in chats.messages(alice, conversation.id)][-1] == again.id


def test_another_users_conversation_is_not_found_and_untouched(chats, alice, bob):
    conversation, _ = chats.start_turn(alice, "secret")
    for call in (lambda: chats.get(bob, conversation.id),
                 lambda: chats.messages(bob, conversation.id),
                 lambda: chats.start_turn(bob, "x", conversation_id=conversation.id),
                 lambda: chats.delete(bob, conversation.id)):
        with pytest.raises(NotFound):
            call()
    assert len(chats.messages(alice, conversation.id)) == 1
    assert chats.list(bob) == []


def test_invalid_status_writes_nothing(chats, alice):
    conversation, _ = chats.start_turn(alice, "q", reply_id="r1")
    with pytest.raises(StoreError):
        chats.finish_turn(alice, conversation.id, reply(status="bogus"))
    assert [m.status for m in chats.messages(alice, conversation.id)] == ["complete", "pending"]


def test_delete_removes_the_messages(chats, alice, db):
    conversation, _ = chats.start_turn(alice, "q", reply_id="r1")
    chats.finish_turn(alice, conversation.id, reply())
    chats.delete(alice, conversation.id)
    assert db.scalar("SELECT count(*) FROM messages") == 0
    with pytest.raises(NotFound):
        chats.get(alice, conversation.id)


def test_recent_lists_only_conversations_started_before(chats, alice, bob):
    first = chats.start_turn(alice, "first")[0]
    second = chats.start_turn(alice, "second")[0]
    chats.start_turn(bob, "bob's")
    assert [c.title for c in chats.recent(alice, before=second, limit=5)] == ["first"]
    assert chats.recent(alice, before=first, limit=5) == []
    third = chats.start_turn(alice, "third")[0]
    assert [c.title for c in chats.recent(alice, before=second, limit=5)] == ["first"]
    assert [c.id for c in chats.recent(alice, limit=2)] == [third.id, second.id]


def test_snapshot_is_stored_on_the_conversation(chats, alice, bob):
    conversation, _ = chats.start_turn(alice, "q")
    chats.set_snapshot(bob, conversation.id, "{}")  # not bob's: no effect
    assert chats.get(alice, conversation.id).snapshot is None
    chats.set_snapshot(alice, conversation.id, '{"x": 1}')
    assert chats.get(alice, conversation.id).snapshot == '{"x": 1}'


def test_titles_are_one_line_and_bounded():
    assert title_for("a\n\tb") == "a b"
    long = title_for("word " * 50)
    assert len(long) <= 80 and long.endswith("…")


def test_the_answer_keeps_the_block_sent_with_its_question(open_db):
    chats, users = Chats(db := open_db()), Users(db)
    alice, bob = users.add("alice")[0].id, users.add("bob")[0].id
    conversation, question = chats.start_turn(alice, "q", reply_id="r1")
    kept = AssistantReply(**{**reply().__dict__, "question_id": question.id,
                             "question_context": "BLOCK"})
    chats.finish_turn(alice, conversation.id, kept)
    assert [m.context for m in chats.messages(alice, conversation.id)] == ["BLOCK", None]
    # Another user's message id is never written.
    theirs, their_question = chats.start_turn(bob, "b")
    chats.start_turn(alice, "again", conversation_id=conversation.id, reply_id="r2")
    sneaky = AssistantReply(**{**reply("r2").__dict__, "question_id": their_question.id,
                               "question_context": "X"})
    chats.finish_turn(alice, conversation.id, sneaky)
    assert [m.context for m in chats.messages(bob, theirs.id)] == [None]


def test_the_tool_exchange_comes_back_as_stored(open_db):
    chats, users = Chats(db := open_db()), Users(db)
    alice = users.add("alice")[0].id
    conversation, question = chats.start_turn(alice, "q", reply_id="r1")
    # Key order matters: the exchange is replayed upstream byte for byte.
    exchange = [{"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "search_facts", "arguments": '{"query": "é"}'}}]},
                {"role": "tool", "content": '{"results": []}', "tool_call_id": "c1"},
                {"role": "assistant", "content": "done"}]
    chats.finish_turn(alice, conversation.id,
                      AssistantReply(**{**reply().__dict__, "question_id": question.id,
                                        "tool_exchange": exchange}))
    stored = chats.messages(alice, conversation.id)
    assert [m.tool_exchange for m in stored] == [None, exchange]
    assert json.dumps(stored[1].tool_exchange) == json.dumps(exchange)


def test_the_answer_is_pending_while_it_streams_and_finished_in_place(open_db):
    chats, users = Chats(db := open_db()), Users(db)
    alice, bob = users.add("alice")[0].id, users.add("bob")[0].id
    conversation, question = chats.start_turn(alice, "q", reply_id="r1")
    assert [(m.role, m.content, m.status, m.reply_to)
            for m in chats.messages(alice, conversation.id)] == [
        ("user", "q", "complete", None), ("assistant", "", "pending", question.id)]
    with pytest.raises(NotFound):  # only its owner finishes it
        chats.finish_turn(bob, conversation.id, reply(content="bob's", question_id=question.id))
    chats.finish_turn(alice, conversation.id, reply(content="done", question_id=question.id))
    _, following = chats.start_turn(alice, "next", conversation_id=conversation.id)
    assert [(m.id, m.content, m.status) for m in chats.messages(alice, conversation.id)][1:] == [
        ("r1", "done", "complete"), (following.id, "next", "complete")]


def test_pending_answers_left_behind_are_marked_interrupted(open_db):
    chats, users = Chats(db := open_db()), Users(db)
    alice = users.add("alice")[0].id
    finished, _ = chats.start_turn(alice, "q1", reply_id="r1")
    chats.finish_turn(alice, finished.id, reply("r1", "whole"))
    left, _ = chats.start_turn(alice, "q2", reply_id="r2")
    assert chats.interrupt_pending() == 1
    assert [m.status for m in chats.messages(alice, left.id)] == ["complete", "interrupted"]
    assert [m.status for m in chats.messages(alice, finished.id)] == ["complete", "complete"]
    assert chats.interrupt_pending() == 0


def test_an_answer_to_a_deleted_conversation_writes_nothing(open_db):
    chats, users = Chats(db := open_db()), Users(db)
    alice = users.add("alice")[0].id
    conversation, _ = chats.start_turn(alice, "q", reply_id="r1")
    chats.delete(alice, conversation.id)
    with pytest.raises(NotFound):
        chats.finish_turn(alice, conversation.id, reply(content="late"))
    with pytest.raises(NotFound):
        chats.start_turn(alice, "again", conversation_id=conversation.id, reply_id="r2")
    assert db.scalar("SELECT count(*) FROM messages") == 0
    assert db.scalar("SELECT count(*) FROM conversations") == 0


@pytest.fixture
def claims(open_db):
    """(Chats, alice's id) on both backends."""
    db = open_db()
    return Chats(db), Users(db).add("alice")[0].id


def test_a_second_turn_is_refused_until_the_first_is_answered(claims):
    chats, alice = claims
    conversation, question = chats.start_turn(alice, "first", reply_id="r1")
    with pytest.raises(TurnInProgress):
        chats.start_turn(alice, "second", conversation_id=conversation.id, reply_id="r2")
    assert [m.content for m in chats.messages(alice, conversation.id)] == ["first", ""]
    chats.finish_turn(alice, conversation.id, reply(question_id=question.id))
    _, again = chats.start_turn(alice, "second", conversation_id=conversation.id,
                                reply_id="r2")
    stored = chats.messages(alice, conversation.id)
    assert [(m.role, m.reply_to, m.status) for m in stored] == [
        ("user", None, "complete"), ("assistant", question.id, "complete"),
        ("user", None, "complete"), ("assistant", again.id, "pending")]
    # A turn that ends without an answer frees the conversation too, and drops the
    # empty answer it had begun.
    chats.end_turn(alice, conversation.id, again.id)
    assert [m.role for m in chats.messages(alice, conversation.id)] == [
        "user", "assistant", "user"]
    chats.start_turn(alice, "third", conversation_id=conversation.id)
    chats.delete(alice, conversation.id)  # linked messages go together
    assert chats.list(alice) == []


def test_a_lapsed_claim_frees_the_conversation_and_stays_lapsed(claims):
    chats, alice = claims
    conversation, crashed = chats.start_turn(alice, "dies", hold_seconds=0, reply_id="late")
    chats.start_turn(alice, "next", conversation_id=conversation.id)
    # The lapsed turn answering late does not free the claim of the turn after it.
    chats.finish_turn(alice, conversation.id, reply("late", question_id=crashed.id))
    with pytest.raises(TurnInProgress):
        chats.start_turn(alice, "third", conversation_id=conversation.id)


def test_concurrent_turns_claim_a_conversation_once(claims):
    chats, alice = claims
    conversation, question = chats.start_turn(alice, "q", reply_id="r1")
    chats.finish_turn(alice, conversation.id, reply(question_id=question.id))

    def claim(index: int) -> str:
        try:
            chats.start_turn(alice, f"racer {index}", conversation_id=conversation.id)
        except TurnInProgress:
            return "refused"
        return "claimed"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(claim, range(8)))
    assert sorted(outcomes) == ["claimed"] + ["refused"] * 7
    assert len(chats.messages(alice, conversation.id)) == 3
