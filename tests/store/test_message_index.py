"""The message index on both backends: background keys, full text, vectors, bounds,
isolation, re-keying, and imports written whole or not at all."""

import numpy as np
import pytest

from store import AssistantReply, Bounds, ConstraintViolation
from store.backend import stores_for
from store.clock import new_id
from store.hybrid import _SQLITE_ALL
from store.recall import ImportedMessage, MessageIndex
from store.recall._search import _KEYWORD_SQL, _OWN_ROWS, _SPEAKERS_SQL, widened
from store.sql import SQLITE


@pytest.fixture
def people(users):
    return users.add("alice")[0], users.add("bob")[0]


def _vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(8).tolist()


def _index(stores, vectors: dict[str, list[float]] | None = None) -> int:
    """Backfill as the background job does; each job gets `vectors[its message id]`."""
    jobs = stores.messages.unembedded(limit=1000)
    stores.messages.save_embeddings([(job, (vectors or {}).get(job.row_id, _vec(0)))
                                     for job in jobs])
    return len(jobs)


def _say(stores, user, text, *, conversation=None, name=None):
    conv, message = stores.chats.start_turn(user.id, text, conversation_id=conversation,
                                            name=name)
    stores.chats.end_turn(user.id, conv.id, message.id)  # a question left unanswered
    return conv.id, message.id


def test_messages_wait_for_the_background_job_then_count_as_indexed(stores, people):
    alice, _ = people
    _say(stores, alice, "I adopted a cat named Miso")
    assert stores.messages.status(alice.id) == (1, 0)
    assert stores.messages.pending_count() == 1
    assert stores.messages.keyword("Miso", Bounds(alice.id)) == []  # not keyed yet
    assert _index(stores) == 1
    assert stores.messages.status(alice.id) == (1, 1)
    assert stores.messages.pending_count() == 0
    assert _index(stores) == 0  # idempotent


def test_keyed_but_unembedded_rows_are_picked_up_again_after_a_restart(stores, db, people):
    alice, _ = people
    _say(stores, alice, "The embedder was down when I said this")
    stores.messages.build_keys()  # keys and full text written; the embedding then failed
    assert [h.content for h in stores.messages.keyword("embedder", Bounds(alice.id))] == [
        "The embedder was down when I said this"]
    restarted = stores_for(db)
    assert restarted.messages.pending_count() == 1
    assert len(restarted.messages.unembedded(limit=10)) == 1


def test_a_pass_reads_only_rows_after_those_it_indexed_and_a_restart_reads_all(
        stores, db, people):
    alice, _ = people
    _say(stores, alice, "the first message")
    assert _index(stores) == 1
    # Behind the watermark: key and vector gone, as if never indexed (only a scan of
    # every row would notice).
    with db.transaction():
        db.execute("DELETE FROM message_index")
    _say(stores, alice, "the second message")
    # SQLite commits in seq order, so a pass starts after the rows it indexed; PostgreSQL
    # (a lower seq may commit later) scans every row.
    assert _index(stores) == (1 if db.dialect == SQLITE else 2)
    assert _index(stores_for(db)) == (1 if db.dialect == SQLITE else 0)  # a restart
    assert stores.messages.status(alice.id) == (2, 2)


def test_an_answer_still_streaming_during_a_pass_is_keyed_when_it_finishes(stores, people):
    alice, _ = people
    reply_id = new_id()
    conversation, question = stores.chats.start_turn(alice.id, "what is my cat called?",
                                                     reply_id=reply_id)
    _say(stores, alice, "and my dog?")  # a later message than the pending answer
    assert _index(stores) == 2
    assert _index(stores) == 0  # the backfill asks until nothing is left
    stores.chats.finish_turn(alice.id, conversation.id, AssistantReply(
        id=reply_id, content="Miso", status="complete", mode="rag", prefix_hash="h",
        usage=None, cached_tokens=None, question_id=question.id))
    assert _index(stores) == 1
    assert [h.content for h in stores.messages.keyword("Miso", Bounds(alice.id))] == ["Miso"]


def test_searches_never_return_another_users_messages(stores, people):
    alice, bob = people
    _, mine = _say(stores, alice, "my passport number is in the blue drawer")
    _, theirs = _say(stores, bob, "my passport is in the blue drawer too")
    _index(stores, {mine: _vec(1), theirs: _vec(1)})
    for bounds, expected in ((Bounds(alice.id), mine), (Bounds(bob.id), theirs)):
        assert [h.message_id for h in stores.messages.keyword("passport drawer", bounds)] == [
            expected]
        assert [h.message_id for h in stores.messages.semantic(_vec(1), bounds)] == [expected]
        assert [h.message_id for h in stores.messages.hybrid("passport", _vec(1), bounds)] == [
            expected]


def test_hybrid_fuses_keyword_and_vector_rankings(stores, people):
    alice, _ = people
    conv, word = _say(stores, alice, "the zeppelin ticket")
    _, near = _say(stores, alice, "something else entirely", conversation=conv)
    _, far = _say(stores, alice, "unrelated chatter", conversation=conv)
    _index(stores, {word: _vec(5), near: _vec(1), far: _vec(9)})
    semantic = stores.messages.semantic(_vec(1), Bounds(alice.id), limit=3)
    assert semantic[0].message_id == near and semantic[0].score == pytest.approx(1.0, abs=1e-3)
    hybrid = stores.messages.hybrid("zeppelin", _vec(1), Bounds(alice.id), limit=3)
    assert {h.message_id for h in hybrid[:2]} == {word, near}  # each tops one ranking
    hit = next(h for h in hybrid if h.message_id == word)
    assert (hit.conversation_id, hit.role, hit.content) == (conv, "user", "the zeppelin ticket")


def test_hybrid_with_its_keyword_half_taken_ahead_ranks_the_same(stores, people):
    alice, bob = people
    conv, word = _say(stores, alice, "the zeppelin ticket")
    _, near = _say(stores, alice, "something else entirely", conversation=conv)
    _, theirs = _say(stores, bob, "my zeppelin ticket too")
    _index(stores, {word: _vec(5), near: _vec(1), theirs: _vec(1)})
    bounds = Bounds(alice.id)
    ahead = stores.messages.hybrid_keyword("zeppelin", bounds, limit=3, pool=6)
    # `near`'s key holds the turn before it; Bob's message is not Alice's to find.
    assert {message_id for message_id, _ in ahead} == {word, near}
    assert stores.messages.hybrid("zeppelin", _vec(1), bounds, limit=3, pool=6,
                                  keyword=ahead) == stores.messages.hybrid(
        "zeppelin", _vec(1), bounds, limit=3, pool=6)


def _axis(i: int) -> list[float]:
    return [1.0 if n == i else 0.0 for n in range(8)]


def test_hybrid_lifts_the_turns_around_a_match(stores, people):
    alice, _ = people
    trip, printer, weather, forecast = stores.imports.import_conversations(alice.id, [
        ("Trip", [ImportedMessage("user", "any plans for May?"),
                  ImportedMessage("assistant", "we fly to Lisbon")]),
        ("Printer", [ImportedMessage("user", "the printer jams"),
                     ImportedMessage("assistant", "try turning it off")]),
        ("Weather", [ImportedMessage("user", "rain again")]),
        ("Forecast", [ImportedMessage("user", "sun tomorrow")])])
    # The semantic ranking tells none of the trip and printer messages apart: all are
    # orthogonal to the query, which the weather and forecast messages are near (its two
    # best: its head, whatever order ties come in).
    vectors = dict.fromkeys(trip.message_ids + printer.message_ids, _axis(1))
    near = (np.array(_axis(0)) + 0.1 * np.array(_axis(1))).tolist()
    _index(stores, {**vectors, weather.message_ids[0]: _axis(0), forecast.message_ids[0]: near})
    hits = stores.messages.hybrid("Lisbon", _axis(0), Bounds(alice.id), limit=10)
    score = {h.message_id: h.score for h in hits}
    question, answer = trip.message_ids
    assert {h.message_id for h in hits[:2]} == {answer, weather.message_ids[0]}
    assert all(0.0 <= h.score <= 1.0 for h in hits) and len(hits) == 6
    # The question asked just before the match shares in it; unrelated turns do not.
    assert score[question] > max(score[m] for m in printer.message_ids)


def test_only_the_best_three_times_the_limit_lift_their_neighbours(stores, people):
    alice, _ = people
    talks = stores.imports.import_conversations(alice.id, [
        (f"Talk {n}", [ImportedMessage("user", f"question {n}"),
                       ImportedMessage("assistant", f"answer {n}")]) for n in range(40)])
    ranking = [(t.message_ids[0], 1.0 - n / 100) for n, t in enumerate(talks)]
    lifted = dict(stores.messages._lifted(ranking, 10))  # lifters: max(3 x 10, 30)
    answers = [t.message_ids[1] for t in talks]
    assert all(answer in lifted for answer in answers[:30])
    assert not any(answer in lifted for answer in answers[30:])


def test_keyword_search_returns_only_messages_that_match(stores, people):
    alice, _ = people
    trip, other = stores.imports.import_conversations(alice.id, [
        ("Trip", [ImportedMessage("user", "any plans for May?"),
                  ImportedMessage("assistant", "we fly to Lisbon")]),
        ("Other", [ImportedMessage("user", "Lisbon is far")])])
    stores.messages.build_keys()
    hits = stores.messages.keyword("Lisbon", Bounds(alice.id))
    # The question before a match shares in it in hybrid search, never in keyword search.
    assert {h.message_id for h in hits} == {trip.message_ids[1], other.message_ids[0]}
    assert all(0.0 <= h.score <= 1.0 for h in hits)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_keyword_search_looks_its_candidates_up_instead_of_walking_the_users_rows(db):
    matches = _SQLITE_ALL.format(t="message_fts", cut="LIMIT 500", own=f" AND {_OWN_ROWS}")
    plan = [row[3] for row in db.execute(
        f"EXPLAIN QUERY PLAN {_KEYWORD_SQL.format(matches=matches)}",
        {"q": '"x"', "user": "u", "after": None, "before": None, "limit": 10})]
    # With a user_id condition here SQLite looped over the user's index (10 of 17 ms
    # at 100k messages): evals/results/recall_neighbours.md.
    assert any(step.startswith("SEARCH k USING INTEGER PRIMARY KEY") for step in plan), plan


def test_date_bounds_apply_to_every_mode(stores, people):
    alice, _ = people
    found = stores.imports.import_conversations(alice.id, [("trips", [
        ImportedMessage("user", "trip to Oslo", created_at="2023-01-10T10:00:00.000000Z"),
        ImportedMessage("user", "trip to Rome", created_at="2023-06-10T10:00:00.000000Z"),
    ])])
    oslo, rome = found[0].message_ids
    _index(stores, {oslo: _vec(1), rome: _vec(1)})
    bounds = Bounds(alice.id, after="2023-03-01T00:00:00.000000Z")
    assert [h.message_id for h in stores.messages.keyword("trip", bounds)] == [rome]
    assert [h.message_id for h in stores.messages.semantic(_vec(1), bounds)] == [rome]
    before = Bounds(alice.id, before="2023-06-10T10:00:00.000000Z")  # exclusive
    assert [h.message_id for h in stores.messages.hybrid("trip", _vec(1), before)] == [oslo]


def test_hybrid_keeps_the_best_keyword_match_the_vectors_missed(stores, people):
    # Six messages near the query vector that match a common query word, and one far from
    # it that alone matches the rare word: the mean of the two rankings puts the six
    # first, each ranking's head keeps the rare match among the first three.
    alice, _ = people
    texts = ["my pottery class"] + [f"weekend {'and more ' * i}plans" for i in range(6)]
    texts += [f"unrelated note {i}" for i in range(14)]  # so that "weekend" is not common
    found = stores.imports.import_conversations(
        alice.id, [(None, [ImportedMessage("user", text)]) for text in texts])
    ids = [f.message_ids[0] for f in found]
    query, away = np.ones(8), np.array([1.0, -1.0] * 4)
    vectors = {ids[0]: away.tolist()} | {
        mid: (query + 0.01 * i * away).tolist() for i, mid in enumerate(ids[1:7])}
    vectors |= {mid: away.tolist() for mid in ids[7:]}
    _index(stores, vectors)
    hits = stores.messages.hybrid("pottery weekend", query.tolist(), Bounds(alice.id), limit=3)
    assert ids[0] in [h.message_id for h in hits]


def test_a_date_range_far_from_the_query_still_gets_its_nearest_messages(stores, people):
    # Every message near the query lies outside the range: the search must widen past
    # them and return the range's messages, nearest first.
    alice, _ = people
    early = [_note(f"early note {i}", f"2023-01-{i + 1:02d}") for i in range(25)]
    late = [_note(f"late note {i}", f"2023-06-{i + 1:02d}") for i in range(6)]
    ids = stores.imports.import_conversations(alice.id, [("notes", early + late)])[0].message_ids
    # Turned ever further from the query: the early notes by a little, the late by more.
    query, away = np.ones(8), np.array([1.0, -1.0] * 4)  # orthogonal
    turns = [0.001 * i for i in range(25)] + [1.0 + i for i in range(6)]
    _index(stores, {mid: (query + t * away).tolist() for mid, t in zip(ids, turns, strict=True)})
    bounds = Bounds(alice.id, after="2023-03-01T00:00:00.000000Z")
    found = stores.messages.semantic(query.tolist(), bounds, limit=4)
    assert [h.message_id for h in found] == ids[25:29]


def test_a_preferred_period_ranks_its_messages_first_and_drops_none(stores, people):
    alice, bob = people
    # Equal matches, each its own conversation (no neighbours), and a weaker one.
    found = stores.imports.import_conversations(alice.id, [
        ("oslo", [_note("trip to Oslo", "2023-01-10")]),
        ("rome", [_note("trip to Rome", "2023-06-10")]),
        ("notes", [_note("the trip planning spreadsheet for the office budget", "2023-06-11")]),
    ])
    (oslo,), (rome,), (notes,) = (f.message_ids for f in found)
    _index(stores, {oslo: _vec(1), rome: _vec(1), notes: _vec(2)})
    bounds = Bounds(alice.id)
    for june, first in ((Bounds(alice.id, after="2023-06-01T00:00:00.000000Z",
                                before="2023-07-01T00:00:00.000000Z"), rome),
                        (Bounds(alice.id, before="2023-02-01T00:00:00.000000Z"), oslo)):
        hybrid = stores.messages.hybrid("trip", _vec(1), bounds, prefer=june)
        keyword = stores.messages.keyword("trip", bounds, prefer=june)
        for hits in (hybrid, keyword):
            assert hits[0].message_id == first and len(hits) == 3
            assert all(0 <= hit.score <= 1 for hit in hits)
    # Another user's period prefers nothing of alice's and shows bob nothing.
    assert stores.messages.keyword("trip", Bounds(bob.id), prefer=Bounds(bob.id)) == []


def _note(text: str, day: str) -> ImportedMessage:
    return ImportedMessage("user", text, created_at=f"{day}T10:00:00.000000Z")


def test_a_widened_search_asks_for_what_the_share_inside_the_dates_needs():
    assert widened(110, 50, 45) == 153  # 50 / (45 / 110), a quarter more
    assert widened(110, 50, 0) == 880  # nothing inside: 8 x
    assert widened(110, 50, 1) == 880  # at most 8 x
    assert widened(20, 4, 3) == 34


def test_keys_carry_speaker_date_and_previous_turn_and_rebuild_on_a_variant_change(db, people):
    alice, _ = people
    stores = stores_for(db, recall_keys="context")
    stores.imports.import_conversations(alice.id, [(None, [
        ImportedMessage("user", "Where should I go in spring?", name="Caroline",
                        created_at="2023-05-08T13:56:00.000000Z"),
        ImportedMessage("assistant", "Kyoto, for the cherry blossoms.",
                        created_at="2023-05-08T13:57:00.000000Z"),
    ])])
    texts = [job.text for job in stores.messages.unembedded(limit=10)]
    assert texts == [
        "8 May 2023, Caroline: Where should I go in spring?",
        "8 May 2023\nCaroline: Where should I go in spring?\nAssistant: Kyoto, for the cherry "
        "blossoms.",
    ]
    stores.messages.save_embeddings([(job, _vec(2)) for job in
                                     stores.messages.unembedded(limit=10)])
    # The previous turn is searchable through the answer's key.
    assert len(stores.messages.keyword("spring", Bounds(alice.id))) == 2
    plain = MessageIndex(db, keys="text")
    assert plain.status(alice.id) == (2, 0)  # built under another variant: not current
    assert [job.text for job in plain.unembedded(limit=10)] == [
        "Where should I go in spring?", "Kyoto, for the cherry blossoms."]
    assert plain.keyword("Caroline", Bounds(alice.id)) == []


def test_a_long_message_embeds_its_first_passage_and_stays_found_by_any_of_its_words(
        db, people):
    alice, _ = people
    stores = stores_for(db, recall_keys="dated")
    opening = "Here are some tips for getting around Tokyo by train and bus."
    tail = " ".join(["More detail about the city and its many neighbourhoods."] * 40)
    stores.imports.import_conversations(alice.id, [(None, [
        ImportedMessage("assistant", f"{opening} {tail} Finally, keep your Suica card topped up.",
                        created_at="2023-05-08T13:56:00.000000Z")])])
    [job] = stores.messages.unembedded(limit=10)
    assert job.text.startswith(f"8 May 2023, Assistant: {opening}")
    assert len(job.text) < 600 and "Suica" not in job.text  # the tail is not embedded
    stores.messages.save_embeddings([(job, _vec(4))])
    assert stores.messages.status(alice.id) == (1, 1)
    # ...but its every word is in the full text, and the hit is the whole message.
    [hit] = stores.messages.keyword("Suica card", Bounds(alice.id))
    assert hit.content.endswith("keep your Suica card topped up.")


def test_deleting_a_conversation_removes_its_messages_from_the_index(stores, people):
    alice, _ = people
    conv, message = _say(stores, alice, "remember the lighthouse")
    _index(stores, {message: _vec(3)})
    stores.chats.delete(alice.id, conv)
    assert stores.messages.keyword("lighthouse", Bounds(alice.id)) == []
    assert stores.messages.semantic(_vec(3), Bounds(alice.id)) == []
    assert stores.messages.status(alice.id) == (0, 0)
    assert stores.db.scalar("SELECT count(*) FROM message_vec") == 0


def test_an_import_is_idempotent_and_written_whole_or_not_at_all(stores, people):
    alice, bob = people
    conversation = ("Trip", [ImportedMessage("user", "hi", name="Ann"),
                             ImportedMessage("assistant", "hello")])
    first = stores.imports.import_conversations(alice.id, [conversation])
    again = stores.imports.import_conversations(alice.id, [conversation])
    assert again[0].created is False and first[0].created is True
    assert (again[0].conversation_id, again[0].message_ids) == (
        first[0].conversation_id, first[0].message_ids)
    assert stores.chats.count(alice.id) == 1
    stored = stores.chats.messages(alice.id, first[0].conversation_id)
    assert [(m.id, m.role, m.name) for m in stored] == [
        (first[0].message_ids[0], "user", "Ann"), (first[0].message_ids[1], "assistant", None)]
    assert stores.imports.import_conversations(bob.id, [conversation])[0].created  # per user
    broken = ("Other", [ImportedMessage("system", "not a chat role")])
    with pytest.raises(ConstraintViolation):
        stores.imports.import_conversations(alice.id, [("New", [ImportedMessage("user", "x")]),
                                                       broken])
    assert stores.chats.count(alice.id) == 1


def test_speakers_are_the_names_of_the_users_own_messages(stores, people):
    alice, bob = people
    assert stores.messages.speakers(alice.id) == []
    for name in ("Melanie", "Caroline", "Melanie", None):
        _say(stores, alice, "We went hiking", name=name)
    _say(stores, bob, "Me too", name="Zoe")
    assert stores.messages.speakers(alice.id) == ["Caroline", "Melanie"]
    assert stores.messages.speakers(bob.id) == ["Zoe"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_speakers_are_read_from_the_index_one_seek_per_name(db):
    plan = " ".join(row[3] for row in db.execute(
        f"EXPLAIN QUERY PLAN {_SPEAKERS_SQL}", {"user": "u", "most": 200}))
    assert "USING COVERING INDEX messages_speaker" in plan and "SCAN messages" not in plan
