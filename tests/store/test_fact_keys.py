"""Facts as keys of the messages they quote (store.recall, both backends): a question
near a fact finds the turn that said it, for as long as the fact lives, its quote stays
and the turn is on the visible branch; never across users."""

from __future__ import annotations

import numpy as np
import pytest

from store import AssistantReply, Bounds
from store.clock import new_id
from store.facts import Evidence


def _axis(i: int, j: int | None = None, *, share: float = 0.0) -> list[float]:
    """Unit vector along axis `i`, tilted by `share` towards axis `j`."""
    vector = np.zeros(8)
    vector[i] = 1.0 - share
    if j is not None:
        vector[j] = share
    return (vector / np.linalg.norm(vector)).tolist()


QUERY = _axis(1)  # "where does she work?"


def _turn(stores, user_id: str, text: str, conversation_id: str | None = None):
    """A question and its answer; (conversation id, question id, answer id)."""
    reply_id = new_id()
    conversation, question = stores.chats.start_turn(
        user_id, text, conversation_id=conversation_id, reply_id=reply_id)
    stores.chats.finish_turn(user_id, conversation.id, AssistantReply(
        reply_id, f"re: {text}", "complete", "rag", "h", None, None, question_id=question.id))
    return conversation.id, question.id, reply_id


def _index(stores, vectors: dict[str, list[float]]) -> None:
    """Index every message as the background job does; unnamed ones lie along axis 7."""
    jobs = stores.messages.unembedded(limit=1000)
    stores.messages.save_embeddings([(job, vectors.get(job.row_id, _axis(7))) for job in jobs])


def _fact(stores, user_id: str, text: str, *message_ids: str):
    """The user's fact along QUERY, quoting `message_ids` (as extraction records them)."""
    fact = stores.facts.create(user_id, category="core", fact=text, embedding=QUERY)
    stores.facts.add_evidence(user_id, fact.id, [Evidence(m, stores.db.scalar(
        "SELECT conversation_id FROM messages WHERE id = $id", {"id": m}), text,
        "2026-01-01T00:00:00Z") for m in message_ids])
    return fact


def _found(stores, user_id: str, mode: str = "semantic", **bounds) -> list[str]:
    """The message ids a search for QUERY ranks, best first."""
    if mode == "hybrid":
        hits = stores.messages.hybrid("nothing in common", QUERY, Bounds(user_id, **bounds),
                                      limit=3)
    else:
        hits = stores.messages.semantic(QUERY, Bounds(user_id, **bounds), limit=3)
    return [h.message_id for h in hits]


def _first(stores, user_id: str, mode: str = "semantic") -> str:
    return _found(stores, user_id, mode)[0]


@pytest.fixture
def said(stores, users):
    """Alice's turn saying where she works (its own key far from the question) and a
    chattier turn nearer the question by its own key."""
    alice = users.add("alice")[0].id
    conversation, works, _ = _turn(stores, alice, "I started at the bakery on Monday")
    _, chatter, _ = _turn(stores, alice, "Work is such a big topic", conversation)
    _index(stores, {works: _axis(0), chatter: _axis(1, 2, share=0.5)})
    return alice, conversation, works, chatter


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_question_near_a_fact_finds_the_turn_it_quotes(stores, said, mode):
    alice, _conversation, works, chatter = said
    assert _first(stores, alice, mode) == chatter  # its own key is nearer
    _fact(stores, alice, "Works at a bakery", works)
    assert _first(stores, alice, mode) == works
    [hit] = [h for h in stores.messages.semantic(QUERY, Bounds(alice), limit=3)
             if h.message_id == works]
    assert hit.score == pytest.approx(1.0, abs=1e-3)  # the fact's similarity, not its own


def test_the_key_goes_with_a_deleted_superseded_or_expired_fact(stores, said):
    alice, _conversation, works, chatter = said
    fact = _fact(stores, alice, "Works at a bakery", works)
    stores.facts.delete(alice, fact.id)
    assert _first(stores, alice) == chatter
    old = _fact(stores, alice, "Works at a bakery", works)
    newer = stores.facts.create(alice, category="core", fact="Works at a cafe")
    stores.facts.supersede(old.id, by_id=newer.id, at="2026-01-02T00:00:00Z")
    assert _first(stores, alice) == chatter


def test_the_key_goes_with_the_quote_when_its_conversation_or_branch_goes(stores, said):
    alice, conversation, works, _ = said
    _fact(stores, alice, "Works at a bakery", works)
    # An edit of the first question abandons the branch holding the quote.
    stores.chats.start_turn(alice, "I started at the library", conversation_id=conversation,
                            edit=True, parent_id=None)
    assert works not in _found(stores, alice)  # off the visible branch, before the forget
    assert stores.facts.forget_abandoned(alice, conversation) != []
    assert works not in _found(stores, alice)


def test_a_deleted_conversation_leaves_no_key_behind(stores, said):
    alice, conversation, works, _ = said
    _, kept, _ = _turn(stores, alice, "Still at the bakery")
    _index(stores, {kept: _axis(3)})
    _fact(stores, alice, "Works at a bakery", works, kept)
    stores.facts.forget_conversation(alice, conversation)
    stores.chats.delete(alice, conversation)
    [hit] = stores.messages.semantic(QUERY, Bounds(alice), limit=1)
    assert (hit.message_id, round(hit.score, 3)) == (kept, 1.0)  # the fact cites what is left


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_facts_are_keys_of_their_own_users_messages_only(stores, users, said, mode):
    alice, _conversation, works, chatter = said
    bob = users.add("bob")[0].id
    _, bobs, _ = _turn(stores, bob, "I work at the bakery too")
    _index(stores, {bobs: _axis(0)})
    # Each fact cites its user's turn and, as a forged quote, the other user's.
    _fact(stores, bob, "Works at a bakery", bobs, works)
    assert _first(stores, alice, mode) == chatter  # Bob's fact is no key of hers
    _fact(stores, alice, "Works at a bakery", works, bobs)
    assert _first(stores, alice, mode) == works
    assert bobs not in _found(stores, alice, mode)
    assert _first(stores, bob, mode) == bobs
    assert works not in _found(stores, bob, mode)


def test_date_bounds_apply_to_fact_keys(stores, said):
    alice, _conversation, works, _ = said
    _fact(stores, alice, "Works at a bakery", works)
    said_at = stores.db.scalar("SELECT created_at FROM messages WHERE id = $id", {"id": works})
    assert works not in _found(stores, alice, before=said_at)
    assert _found(stores, alice, after=said_at)[0] == works


def test_facts_found_ahead_give_the_same_keys_as_a_search_of_them(stores, said):
    """A chat turn hands hybrid search the facts it found for its block: the ranking is
    the one a second search of the same facts gives."""
    alice, _conversation, works, chatter = said
    _fact(stores, alice, "Works at a bakery", works)
    stores.facts.create(alice, category="core", fact="Likes rye bread", embedding=_axis(3))
    nearest = [(h.fact.id, 1.0 - h.distance)
               for h in stores.facts.search_by_vector(alice, QUERY, limit=20)]

    def ranked(**ahead) -> list[tuple[str, float]]:
        return [(h.message_id, round(h.score, 9)) for h in stores.messages.hybrid(
            "nothing in common", QUERY, Bounds(alice), limit=3, **ahead)]

    assert ranked(facts=nearest) == ranked() and ranked()[0][0] == works
    assert ranked(facts=[])[0][0] == chatter  # no fact handed over: no fact key
