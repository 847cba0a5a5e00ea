"""Keyword search does bounded work whatever its words (store/hybrid.py): common terms
are dropped when a rarer one is left, at most CANDIDATES matches are ranked; on a
corpus below those bounds the ranking is the exact one. Both backends."""

import pytest

from store import Bounds, ChunkIn, fts, hybrid
from store.backend import stores_for
from store.hybrid import searched_terms
from store.sql import POSTGRESQL

NOTES = [f"weekly notes {i}" for i in range(6)]  # "notes" matches 7 rows, "weekly" 6
DEPLOY = "deploy notes for the release"


@pytest.fixture
def stores(db):
    return stores_for(db)


def _analyze(db, table: str) -> None:
    """PostgreSQL judges terms by ANALYZE's statistics (autovacuum's job in service)."""
    if db.dialect == POSTGRESQL:
        db.execute(f"ANALYZE {table}")


def _corpus(stores):
    for i, text in enumerate([*NOTES, DEPLOY]):
        stores.knowledge.save(owner_id=None, title=f"t{i}", content=text,
                              source_type="document", chunks=[ChunkIn(text, "en")])
    _analyze(stores.db, "knowledge_fts")


def _texts(stores, query: str, limit: int = 10) -> list[str]:
    return [h.text for h in stores.knowledge.keyword(query, viewer_id="x", limit=limit)]


def test_below_the_bounds_the_ranking_is_unchanged(stores, monkeypatch):
    _corpus(stores)
    exact = _texts(stores, "deploy notes")
    monkeypatch.setattr("store.hybrid.COMMON_ROWS", 5)  # "notes" and "weekly" are common now
    assert _texts(stores, "deploy notes")[0] == exact[0] == DEPLOY
    assert len(exact) == 7  # unpruned: every row holding "notes" was ranked


def test_a_common_term_is_dropped_when_a_rarer_one_is_left(stores, monkeypatch):
    _corpus(stores)
    monkeypatch.setattr("store.hybrid.COMMON_ROWS", 5)
    assert list(searched_terms(stores.db, "knowledge_fts", ["deploy", "notes"])) == ["deploy"]
    assert _texts(stores, "deploy notes") == [DEPLOY]


def test_a_term_in_a_large_share_of_a_smaller_table_is_common_too(stores, monkeypatch):
    _corpus(stores)  # 7 rows; "notes" is in all of them, "deploy" in one
    assert list(searched_terms(stores.db, "knowledge_fts", ["deploy", "notes"])) == [
        "deploy", "notes"]  # under COMMON_FLOOR: exact
    monkeypatch.setattr("store.hybrid.COMMON_FLOOR", 2)
    monkeypatch.setattr("store.hybrid.COMMON_SHARE", 0.5)  # common from 3.5 rows here
    assert list(searched_terms(stores.db, "knowledge_fts", ["deploy", "notes"])) == ["deploy"]
    assert _texts(stores, "deploy notes") == [DEPLOY]


def test_a_query_of_only_common_words_still_finds_rows(stores, monkeypatch):
    _corpus(stores)
    monkeypatch.setattr("store.hybrid.COMMON_ROWS", 5)
    assert list(searched_terms(stores.db, "knowledge_fts", ["notes", "weekly"])) in (
        ["notes"], ["weekly"])
    found = _texts(stores, "notes weekly")
    assert len(found) >= 6 and all("notes" in text for text in found)


def test_a_query_of_only_common_words_ranks_fewer_candidates(stores, monkeypatch):
    _corpus(stores)
    monkeypatch.setattr("store.hybrid.COMMON_ROWS", 5)
    monkeypatch.setattr("store.hybrid.COMMON_CANDIDATES", 2)
    assert len(_texts(stores, "notes weekly")) == 2
    assert _texts(stores, "deploy notes") == [DEPLOY]  # a rare term: the usual cap


def test_at_most_candidates_matches_are_ranked(stores, monkeypatch):
    _corpus(stores)
    monkeypatch.setitem(hybrid.CANDIDATES, stores.db.dialect, 3)
    assert len(_texts(stores, "notes")) == 3
    monkeypatch.setitem(hybrid.CANDIDATES, stores.db.dialect, 5000)
    assert len(_texts(stores, "notes")) == 7


def test_message_search_prunes_common_terms_too(stores, users, monkeypatch):
    alice = users.add("alice")[0]
    for text in [*NOTES, DEPLOY]:
        conv, message = stores.chats.start_turn(alice.id, text)
        stores.chats.end_turn(alice.id, conv.id, message.id)
    stores.messages.build_keys()
    _analyze(stores.db, "message_fts")
    monkeypatch.setattr("store.hybrid.COMMON_ROWS", 5)
    hits = stores.messages.keyword("deploy notes", Bounds(alice.id))
    assert [h.content for h in hits] == [DEPLOY]
    assert len(stores.messages.keyword("weekly notes", Bounds(alice.id))) >= 6


def test_a_term_matching_nothing_does_not_displace_a_common_one(stores, monkeypatch):
    _corpus(stores)
    monkeypatch.setattr("store.hybrid.COMMON_ROWS", 5)
    assert list(searched_terms(stores.db, "knowledge_fts", ["zyxwv", "notes"])) == ["notes"]
    assert len(_texts(stores, "zyxwv notes")) == 7
    assert _texts(stores, "zyxwv") == []


def test_message_candidates_are_the_users_own_rows(stores, users, monkeypatch):
    """Every user's messages share one FTS table: other users' newer matches must not
    fill the cap and hide the searcher's older ones."""
    alice, bob = users.add("alice")[0], users.add("bob")[0]
    for user, texts in ((alice, ["notes from the harbour trip"]),
                        (bob, [f"weekly notes {i}" for i in range(8)])):
        for text in texts:
            conv, message = stores.chats.start_turn(user.id, text)
            stores.chats.end_turn(user.id, conv.id, message.id)
    stores.messages.build_keys()
    _analyze(stores.db, "message_fts")
    monkeypatch.setitem(hybrid.CANDIDATES, stores.db.dialect, 3)
    monkeypatch.setattr("store.hybrid.COMMON_CANDIDATES", 3)
    hits = stores.messages.keyword("notes", Bounds(alice.id))
    assert [h.content for h in hits] == ["notes from the harbour trip"]


@pytest.mark.parametrize("backend", ["sqlite"])  # PostgreSQL reads estimates instead
def test_frequent_terms_counts_are_kept_and_rare_ones_counted_each_time(stores, monkeypatch):
    monkeypatch.setattr("store.hybrid.KEEP_COUNTS_FROM", 5)
    _corpus(stores)

    def counts():
        return dict(searched_terms(stores.db, "knowledge_fts", ["notes", "deploy", "zebra"]))

    assert counts() == {"notes": 7, "deploy": 1}
    for i in range(3):
        text = f"deploy notes zebra {i}"
        stores.knowledge.save(owner_id=None, title=text, content=text, source_type="document",
                              chunks=[ChunkIn(text, "en")])
    # "notes" (7 rows, kept) is not counted again; "deploy" and the new "zebra" are.
    assert counts() == {"notes": 7, "deploy": 4, "zebra": 3}
    assert len(_texts(stores, "zebra")) == 3
    monkeypatch.setattr("store.hybrid.STATS_SECONDS", 0.0)  # a kept count ages out
    assert counts()["notes"] == 10


@pytest.mark.parametrize("backend", ["postgresql"])  # SQLite has no lexemes to look up
def test_a_terms_lexemes_are_looked_up_once(stores, monkeypatch):
    _corpus(stores)
    sent = []
    execute = stores.db.execute

    def spy(query, params=None):
        sent.append(query)
        return execute(query, params)

    monkeypatch.setattr(stores.db, "execute", spy)
    first = _texts(stores, "deploy notes")
    looked_up = sum("tsvector_to_array" in query for query in sent)
    again = _texts(stores, "notes deploy")
    assert first == again and first
    assert looked_up == 1
    assert sum("tsvector_to_array" in query for query in sent) == 1



def _scored(stores, query: str, limit: int) -> list[tuple[str, float]]:
    return [(h.text, round(h.score, 9))
            for h in stores.knowledge.keyword(query, viewer_id="x", limit=limit)]


@pytest.mark.parametrize("backend", ["sqlite"])  # PostgreSQL ranks every match
def test_a_frequent_terms_rows_are_ranked_only_where_a_rarer_term_is(stores, monkeypatch):
    deploys = [DEPLOY, "deploy the hotfix", "deploy notes, second draft"]
    for i, text in enumerate([*NOTES, *deploys, *(f"filler text {i}" for i in range(20))]):
        stores.knowledge.save(owner_id=None, title=f"t{i}", content=text,
                              source_type="document", chunks=[ChunkIn(text, "en")])
    exact = {limit: _scored(stores, "deploy notes", limit) for limit in (3, 5)}
    assert {text for text, _ in exact[3][:2]} == {DEPLOY, "deploy notes, second draft"}
    monkeypatch.setattr("store.hybrid.COMMON_FLOOR", 4)  # "notes" (8 rows) is frequent now,
    monkeypatch.setattr("store.hybrid.COMMON_SHARE", 10.0)  # but not common
    anchored, anchored_match = [], fts.anchored_match
    monkeypatch.setattr("store.fts.anchored_match", lambda a, o: anchored.append((a, o))
                        or anchored_match(a, o))
    # The three "deploy" rows, each with the score the exact ranking gives it: "notes"
    # still counts where it is beside "deploy".
    assert _scored(stores, "deploy notes", 3) == exact[3]
    assert anchored == [(["deploy"], ["notes"])]  # only rows holding "deploy" were ranked
    # More rows asked for than "deploy" has: every match is ranked, as before.
    five = _scored(stores, "deploy notes", 5)
    assert five == exact[5] and sum("deploy" not in text for text, _ in five) == 2
