"""Facts' evidence on both backends: quotes recorded per fact, and a deleted
conversation taking the facts that rest only on it."""

from __future__ import annotations

import numpy as np

from store.facts import Evidence
from tests import _seed


def _vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).normal(size=8).astype("float32").tolist()


def _said(stores, user_id, conversation, text):
    message = _seed.message(stores.db, user_id, conversation, text)
    return Evidence(message, conversation, text, "2026-01-01T00:00:00Z")


def test_quotes_are_kept_per_fact_in_order_and_once_per_message(stores, users):
    user = users.add("alice")[0]
    conversation = _seed.conversation(stores.db, user.id)
    first = _said(stores, user.id, conversation, "I keep bees")
    second = _said(stores, user.id, conversation, "Bees again")
    fact = stores.facts.create(user.id, category="core", fact="Keeps bees")
    stores.facts.add_evidence(user.id, fact.id, [first])
    stores.facts.add_evidence(user.id, fact.id, [second, first])  # first: already there
    assert stores.facts.evidence(user.id, [fact.id]) == {fact.id: [first, second]}
    other = users.add("bob")[0]
    assert stores.facts.evidence(other.id, [fact.id]) == {}


def test_a_deleted_conversation_takes_only_the_facts_resting_on_it_alone(stores, users):
    user = users.add("alice")[0]
    gone, kept = (_seed.conversation(stores.db, user.id) for _ in range(2))
    bees = stores.facts.create(user.id, category="core", fact="Keeps bees",
                               embedding=_vec(1))
    lyon = stores.facts.create(user.id, category="core", fact="Lives in Lyon",
                               embedding=_vec(2))
    by_hand = stores.facts.create(user.id, category="core", fact="Likes tea")
    stores.facts.add_evidence(user.id, bees.id, [_said(stores, user.id, gone, "I keep bees")])
    in_gone = _said(stores, user.id, gone, "I live in Lyon")
    in_kept = _said(stores, user.id, kept, "Still in Lyon")
    stores.facts.add_evidence(user.id, lyon.id, [in_gone, in_kept])

    assert stores.facts.forget_conversation(user.id, gone) == [bees.id]
    live = {f.id for f in stores.facts.list(user.id)[0]}
    assert live == {lyon.id, by_hand.id}
    assert stores.facts.evidence(user.id, [lyon.id]) == {lyon.id: [in_kept]}
    assert [h.fact.id for h in stores.facts.search_by_vector(user.id, _vec(1), limit=5)] == [
        lyon.id]  # the deleted fact's vector went with it
    assert stores.facts.forget_conversation(user.id, kept) == [lyon.id]


def test_another_users_conversation_id_forgets_nothing(stores, users):
    alice, bob = users.add("alice")[0], users.add("bob")[0]
    conversation = _seed.conversation(stores.db, alice.id)
    fact = stores.facts.create(alice.id, category="core", fact="Keeps bees")
    stores.facts.add_evidence(alice.id, fact.id,
                              [_said(stores, alice.id, conversation, "I keep bees")])
    assert stores.facts.forget_conversation(bob.id, conversation) == []
    assert stores.facts.get(alice.id, fact.id)
    assert len(stores.facts.evidence(alice.id, [fact.id])[fact.id]) == 1


def test_a_forget_keeps_its_count_and_time_after_the_asking_message_is_gone(stores, users):
    user, other = users.add("alice")[0], users.add("bob")[0]
    conversation = _seed.conversation(stores.db, user.id)
    asking = _seed.message(stores.db, user.id, conversation, "Forget where I live")
    stores.facts.record_forget(user.id, message_id=asking, facts=2)
    stores.facts.record_forget(user.id, message_id=None, facts=1)
    [newest, first] = stores.facts.forgets(user.id)
    assert (first.message_id, first.conversation_id, first.facts) == (asking, conversation, 2)
    assert newest.facts == 1 and stores.facts.forgets(user.id, limit=1) == [newest]
    assert stores.facts.forgets(other.id) == []
    stores.chats.delete(user.id, conversation)
    assert [(f.message_id, f.facts) for f in stores.facts.forgets(user.id)] == [
        (None, 1), (None, 2)]
