"""Branches of a conversation (store.branches) on both backends: the visible branch,
a regenerate that never answers, the facts of an abandoned branch, and the migration
that makes every existing conversation one linear branch."""

from __future__ import annotations

import pytest

from store import AssistantReply, Chats, SqliteDatabase
from store._migrations import apply
from store.branches import NothingToRegenerate, visible
from store.chats import ChatMessage
from store.clock import new_id
from store.facts import Evidence


def _turn(chats, user_id: str, text: str, conversation_id: str | None = None, **options):
    """A whole turn: the question, then its answer `re: <text>` (complete)."""
    reply_id = new_id()
    conversation, question = chats.start_turn(user_id, text, conversation_id=conversation_id,
                                              reply_id=reply_id, **options)
    _answer(chats, user_id, conversation.id, question.id, reply_id, f"re: {text}")
    return conversation.id, question.id, reply_id


def _answer(chats, user_id, conversation_id, question_id, reply_id, content):
    chats.finish_turn(user_id, conversation_id, AssistantReply(
        reply_id, content, "complete", "rag", "h", None, None, question_id=question_id))


def _shown(chats, user_id, conversation_id) -> list[str]:
    return [m.content for m in chats.branch(user_id, conversation_id)]


def _message(id_: str, parent: str | None) -> ChatMessage:
    return ChatMessage(id_, "c", "user", id_, "complete", "t", parent_id=parent)


def test_the_visible_branch_runs_through_the_chosen_message_and_its_newest_replies():
    tree = [_message("q1", None), _message("a1", "q1"), _message("q2", "a1"),
            _message("a2", "q2"), _message("q2b", "a1"), _message("a2b", "q2b"),
            _message("q1b", None)]
    ids = lambda chosen: [m.id for m in visible(tree, chosen)]  # noqa: E731
    assert ids(None) == ["q1b"]  # the newest first message
    assert ids("q2") == ["q1", "a1", "q2", "a2"]
    assert ids("a1") == ["q1", "a1", "q2b", "a2b"]  # down through the newest reply
    assert ids("gone") == ["q1b"] and visible([], None) == []


def test_a_regenerate_that_never_answers_gives_the_branch_back(stores, users):
    chats = stores.chats
    alice = users.add("alice")[0].id
    conversation_id, question_id, first = _turn(chats, alice, "Q")
    reply_id = new_id()
    conversation, question = chats.start_regenerate(alice, conversation_id, reply_id=reply_id,
                                                    hold_seconds=60)
    assert question.id == question_id and conversation.chosen_id == reply_id
    assert _shown(chats, alice, conversation_id) == ["Q", ""]
    chats.end_turn(alice, conversation_id, question_id)
    assert _shown(chats, alice, conversation_id) == ["Q", "re: Q"]
    assert [m.id for m in stores.extraction.pending(alice, limit=10)] == [question_id, first]
    _turn(chats, alice, "next", conversation_id)  # the conversation was freed
    assert _shown(chats, alice, conversation_id) == ["Q", "re: Q", "next", "re: next"]


def test_nothing_to_regenerate_after_an_unanswered_question(stores, users):
    chats = stores.chats
    alice = users.add("alice")[0].id
    conversation, _ = chats.start_turn(alice, "Q")
    chats.end_turn(alice, conversation.id, chats.branch(alice, conversation.id)[0].id)
    with pytest.raises(NothingToRegenerate):
        chats.start_regenerate(alice, conversation.id, reply_id=new_id(), hold_seconds=60)
    _turn(chats, alice, "again", conversation.id)  # the refusal left no claim behind


def test_only_facts_resting_on_abandoned_messages_alone_go(stores, users):
    chats, facts = stores.chats, stores.facts
    alice = users.add("alice")[0].id
    conversation_id, q1, a1 = _turn(chats, alice, "I live in Lyon")
    _, q2, _ = _turn(chats, alice, "I paddle a kayak", conversation_id)

    def grounded(text: str, *message_ids: str) -> str:
        fact = facts.create(alice, category="core", fact=text)
        facts.add_evidence(alice, fact.id, [Evidence(m, conversation_id, "q", "t")
                                            for m in message_ids])
        return fact.id

    kayak, both = grounded("Paddles a kayak", q2), grounded("Lyon, kayak", q1, q2)
    by_hand = facts.create(alice, category="core", fact="Likes tea").id
    assert facts.forget_abandoned(alice, conversation_id) == []  # nothing abandoned yet
    chats.start_turn(alice, "I paddle a canoe", conversation_id=conversation_id, edit=True,
                     parent_id=a1)
    assert facts.forget_abandoned(alice, conversation_id) == [kayak]
    assert {f.id for f in facts.list(alice)[0]} == {both, by_hand}
    assert [e.message_id for e in facts.evidence(alice, [both])[both]] == [q1]


def test_the_migration_makes_existing_conversations_linear(tmp_path):
    import sqlean

    conn = sqlean.connect(str(tmp_path / "x.db"), isolation_level=None)
    apply(conn, upto=21)
    conn.execute("INSERT INTO users(id, name, created_at) VALUES ('u', 'alice', 'c')")
    conn.execute("INSERT INTO conversations(id, user_id, title, created_at, updated_at) "
                 "VALUES ('c', 'u', 'old', 't', 't')")
    for n, role in enumerate(["user", "assistant", "user", "assistant"]):
        conn.execute("INSERT INTO messages(id, conversation_id, user_id, role, content, "
                     f"created_at) VALUES ('m{n}', 'c', 'u', '{role}', 'text {n}', 't{n}')")
    conn.close()
    db = SqliteDatabase(tmp_path / "x.db", embed_model="m", embed_dim=4)
    chats = Chats(db)
    assert [(m.id, m.parent_id) for m in chats.branch("u", "c")] == [
        ("m0", None), ("m1", "m0"), ("m2", "m1"), ("m3", "m2")]
    _, question = chats.start_turn("u", "new", conversation_id="c")
    assert question.parent_id == "m3"
    db.close()
