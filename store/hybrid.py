"""What keyword + vector (hybrid) search shares across domains (knowledge, messages).

Keyword ranking is the one piece written per backend: FTS5 BM25 on SQLite, tsvector
`ts_rank` (normalised by document length) on PostgreSQL. Both rank only the terms of
`store.fts`, so no user text reaches MATCH or tsquery syntax. Rankings are fused by
their scores (`convex_merge`).

The work a keyword search does is bounded, whatever its words (evals/results/
pg_bench.md, knowledge_bench.md): ranking cost grows with the rows a term matches, so

* a term matching COMMON_ROWS rows or more, or COMMON_SHARE of the table's rows (from
  COMMON_FLOOR rows up), is dropped when the query has a rarer one (it would add little
  to the ranking and most of the cost); a query made only of common terms is searched
  by its rarest one, ranking COMMON_CANDIDATES matches;
* otherwise at most CANDIDATES matches are ranked (5,000 on SQLite, the newest; 2,000
  on PostgreSQL, the first the GIN index yields, in table order);
* on SQLite, when the terms under COMMON_FLOOR rows match the `limit` rows asked for on
  their own, only the rows holding one of them are ranked, with every term's score
  (`fts.anchored_match`): a row holding only the frequent terms scores below them, and
  ranking its thousands of matches was most of a chat turn's knowledge search (12.8
  against 2.5 ms at 100k chunks, the same top ten). Fewer rows than `limit` after the
  caller's filters: the search runs again over every match.

Below COMMON_FLOOR rows per term and CANDIDATES matches nothing changes: the ranking is
exact. The bounds were chosen in evals/results/keyword_bounds_sweep.md; their recall
cost on labelled queries is in evals/results/retrieval_bounds*.md.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from store import fts
from store.contract import Database
from store.sql import POSTGRESQL, SQLITE

KEYWORD_OVERFETCH = 500
COMMON_ROWS = 5000
# In a smaller table (a user's 10k messages) a term in 1,000-5,000 rows was most of a chat
# turn's keyword work (4,200 matches ranked: 9 ms) for an idf of about a third of a rare
# term's. 5 % is the share COMMON_ROWS is of the 100k-chunk corpus it was chosen on;
# below COMMON_FLOOR rows ranking every match costs ~2 ms, and small corpora stay exact.
COMMON_SHARE = 0.05
COMMON_FLOOR = 1000
# ts_rank reads each candidate's row from the heap: dearer per row than FTS5's BM25.
CANDIDATES = {SQLITE: 5000, POSTGRESQL: 2000}
# A query of only common terms has little to rank by (their weights are near zero), and
# finding its matches already costs most of the budget.
COMMON_CANDIDATES = 1000

Ranking = list[tuple[str, float]]  # (row id, score) best first
T = TypeVar("T")


def pool_for(limit: int) -> int:
    """Candidates each ranking brings to a hybrid search of `limit` hits."""
    return max(limit * 5, 50)


# (rowid, score) of the candidates, best first; {t} the FTS table, {cut} "LIMIT $over" or
# "", {own} "" or " AND " the caller's predicate on rowid.
_MATCHES = {
    "sqlite": (
        "SELECT rowid, -rank AS score FROM (SELECT rowid, rank FROM {t} WHERE {t} MATCH $q"
        "{own} ORDER BY rowid DESC LIMIT $candidates) ORDER BY rank, rowid {cut}"),
    # ts_rank with normalisation 1 (divides by 1 + log of the document's length), not
    # ts_rank_cd: on evals/retrieval's labelled queries it ranks like SQLite's BM25
    # (keyword MRR 0.898 against 0.858, hybrid 0.941 against 0.922), and costs ~0.55 of it
    # (6.4 against 11.4 ms for 2,000 matches at 100k chunks): retrieval_pg_ranking.md.
    POSTGRESQL: (
        "SELECT f.rowid, ts_rank(f.tsv, f.q, 1) AS score FROM (SELECT rowid, tsv, q "
        "FROM {t}, to_tsquery('english', $q) AS q WHERE tsv @@ q{own} "
        "LIMIT $candidates) f ORDER BY score DESC, f.rowid {cut}"),
}
# SQLite when its counts show that the cap cannot bite: every match, ranked in one pass.
_SQLITE_ALL = ("SELECT rowid, -rank AS score FROM {t} WHERE {t} MATCH $q{own} "
               "ORDER BY rank, rowid {cut}")
# How many rows match one term, counting no further than COMMON_ROWS.
_SQLITE_COUNT = "SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {t} MATCH $q LIMIT $common)"
# A count costs about as much as the rows it counts, so those of frequent terms (which
# recur in queries) are kept for STATS_SECONDS. Only those: a rare term's count is cheap
# and may grow from 0 with the next write, which the next search must see.
KEEP_COUNTS_FROM = 500
KEPT_COUNTS = 4096  # terms kept per table (SQLite counts) and per database (lexemes)
# PostgreSQL's estimate comes from ANALYZE's lexeme statistics (autovacuum keeps them),
# read once a minute per table: a count would build the term's whole GIN bitmap, the
# cost being avoided, and reading the statistics costs ~10 ms. A lexeme missing from
# them is rarer than every one listed.
STATS_SECONDS = 60.0
# The table's size for COMMON_SHARE, read once a minute: SQLite's last rowid (rowids grow
# with each insert; deletes make it an overestimate, dropping fewer terms), PostgreSQL's
# estimate (-1 before the table's first ANALYZE).
_SIZE = {SQLITE: "SELECT rowid FROM {t} ORDER BY rowid DESC LIMIT 1",
         POSTGRESQL: "SELECT reltuples FROM pg_class WHERE oid = to_regclass($t)"}
_PG_STATS = (
    "SELECT CAST(CAST(s.most_common_elems AS text) AS text[]) AS elems, "
    "s.most_common_elem_freqs AS freqs, c.reltuples FROM pg_stats s "
    "JOIN pg_class c ON c.oid = to_regclass($t) WHERE s.schemaname = current_schema() "
    "AND s.tablename = $t AND s.attname = 'tsv'"
)
# Each term's lexemes (none for an `english` stop word, which matches nothing). They
# depend only on the text search configuration: kept per process (KEPT_COUNTS terms per
# database), which saves a round trip per search once a term has been seen.
_PG_LEXEMES = (
    "SELECT t.term, tsvector_to_array(to_tsvector('english', t.term)) AS lexemes "
    "FROM unnest(CAST($terms AS text[])) AS t(term)"
)
# Which of the terms match a row (cheap for the rare terms it is asked about).
_PG_FOUND = (
    "SELECT t.term FROM unnest(CAST($terms AS text[])) AS t(term) "
    "WHERE EXISTS (SELECT 1 FROM {t} WHERE tsv @@ to_tsquery('english', t.term))"
)
_stats: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # db -> {table: (at, rows)}
# db -> {table: {term: (at, count)}}, SQLite's kept counts
_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lexemes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # db -> {term: lexemes}
_sizes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # db -> {table: (at, rows)}


# PostgreSQL ranks in its own server processes: the two rankings of a hybrid search run
# at once, each on its thread's connection, while the caller waits. SQLite ranks in this
# process, where a second thread would only compete for the same cores.
_second_ranking = ThreadPoolExecutor(4, thread_name_prefix="chatsvc-ranking")


def both_rankings(db: Database, first: Callable[[], Ranking], second: Callable[[], Ranking]
                  ) -> tuple[Ranking, Ranking]:
    """`first()` and `second()`, at once where the database does the work elsewhere. In a
    transaction they share its connection: another one would not see its writes."""
    if db.dialect != POSTGRESQL or db.in_transaction():
        return first(), second()
    later = _second_ranking.submit(second)
    return first(), later.result()


def convex_merge(rankings: Sequence[Ranking], *, head: int = 0) -> Ranking:
    """Score fusion: each ranking's scores min-max scaled to 0..1 (a ranking whose scores
    are all equal counts 1), then averaged, an id missing from a ranking counting 0 there;
    ties by id. With `head`, the first `head` ids of every ranking come before all others:
    their score gains 1, then every score is halved (still 0..1).

    Unlike Reciprocal Rank Fusion (which it replaced) it keeps how far apart the scores
    are: where one ranking barely tells candidates apart, the other decides. Measured in
    evals/results/recall_fusion.md: conversation search recall@10 0.710 -> 0.742 on a
    LoCoMo conversation, 0.851 -> 0.862 on evals/recall's own set; knowledge MRR even.
    The equal weights are the untuned choice (Bruch et al., "An Analysis of Fusion
    Functions for Hybrid Retrieval", found it robust to them).
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        if not ranking:
            continue
        low = min(score for _, score in ranking)
        spread = max(score for _, score in ranking) - low
        for item, score in ranking:
            scaled = (score - low) / spread if spread > 0 else 1.0
            scores[item] = scores.get(item, 0.0) + scaled / len(rankings)
    if head:
        first = {item for ranking in rankings for item, _ in ranking[:head]}
        scores = {item: (score + (item in first)) / 2 for item, score in scores.items()}
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def keyword_ranking(db: Database, query: str, params: dict, *, table: str, sql: str,
                    own: str = "") -> Ranking:
    """(id, score) best first (higher is better), at most `params["limit"]`.

    `sql` selects `id` and `score` from `({matches})`, the ranked candidates of the FTS
    table `table` (columns `rowid`, `score`), joined and filtered by the caller. `own`,
    a predicate on `rowid`, restricts the candidates before the cap: a table shared by
    every user would otherwise fill the cap with other users' rows.
    """
    threshold = common_at(db, table)
    counts = searched_terms(db, table, fts.query_terms(query), common=threshold)
    if not counts:
        return []
    if anchors := _anchors(db.dialect, counts, params["limit"]):
        ranking = _ranked(db, params, table=table, sql=sql, own=own, counts=anchors,
                          expression=fts.anchored_match(list(anchors), [
                              t for t in counts if t not in anchors]),
                          common=False, scale=1 / fts.ANCHORED_REPEATS)
        if len(ranking) >= params["limit"]:
            return ranking
    expression = " | ".join(counts) if db.dialect == POSTGRESQL else fts.or_match(list(counts))
    return _ranked(db, params, table=table, sql=sql, own=own, counts=counts,
                   expression=expression, common=min(counts.values()) >= threshold)


def _anchors(dialect: str, counts: dict[str, float], limit: int) -> dict[str, float]:
    """The terms under COMMON_FLOOR rows, when they match `limit` rows together and a
    more frequent term is searched too (see the module doc); on SQLite only."""
    scarce = {t: n for t, n in counts.items() if n < COMMON_FLOOR}
    if dialect != SQLITE or len(scarce) == len(counts) or sum(scarce.values()) < limit:
        return {}
    return scarce


def _ranked(db: Database, params: dict, *, table: str, sql: str, own: str,
            counts: dict[str, float], expression: str, common: bool, scale: float = 1.0
            ) -> Ranking:
    """`sql` over the candidates matching `expression`, of `counts`' terms; `common`: they
    are one common term; `scale`: what the scores are multiplied by."""
    params = {**params, "q": expression,
              "candidates": COMMON_CANDIDATES if common else CANDIDATES[db.dialect],
              "over": max(KEYWORD_OVERFETCH, params["limit"])}
    matches = _matches(db.dialect, counts)
    # The filtered top `limit` is taken from the best KEYWORD_OVERFETCH candidates (ranking
    # the FTS table alone is fast); only when too few of those pass the filters are
    # all candidates joined and filtered.
    own = f" AND {own}" if own else ""
    rows = db.execute(sql.format(matches=matches.format(t=table, cut="LIMIT $over", own=own)),
                      params).fetchall()
    if len(rows) < params["limit"]:
        rows = db.execute(sql.format(matches=matches.format(t=table, cut="", own=own)),
                          params).fetchall()
    return [(row["id"], float(row["score"]) * scale) for row in rows]


def _matches(dialect: str, counts: dict[str, float]) -> str:
    """The candidates query; on SQLite without the cap when the counts (exact below
    COMMON_ROWS) show that it cannot bite: ranking every match in one pass is cheaper."""
    few = max(counts.values()) < COMMON_ROWS and sum(counts.values()) <= CANDIDATES[dialect]
    return _SQLITE_ALL if dialect == SQLITE and few else _MATCHES[dialect]


def searched_terms(db: Database, table: str, terms: list[str], *,
                   common: float | None = None) -> dict[str, float]:
    """`terms` less the common ones (see the module doc; `common`: `common_at`, already
    read), the rarest alone when all are, each with its count. A term that matches
    nothing is left out: it must not displace a common one."""
    common = common_at(db, table) if common is None else common
    counts = _match_counts(db, table, terms, common) if terms else {}
    searchable = [t for t in terms if t in counts]
    if not searchable:
        return {}
    rare = [t for t in searchable if counts[t] < common]
    kept = rare or [min(searchable, key=lambda t: counts[t])]  # min() keeps the first of ties
    return {t: counts[t] for t in kept}


def common_at(db: Database, table: str) -> float:
    """How many matching rows make a term of `table` common."""
    return min(COMMON_ROWS, max(COMMON_FLOOR, COMMON_SHARE * _table_rows(db, table)))


def _table_rows(db: Database, table: str) -> float:
    return _per_minute(_sizes, db, table, lambda: max(0.0, float(
        db.scalar(_SIZE[db.dialect].format(t=table), {"t": table}) or 0)))


def _per_minute(cache: weakref.WeakKeyDictionary, db: Database, table: str,
                read: Callable[[], T]) -> T:
    """`read()` for `table`, kept in `cache` (per database) for STATS_SECONDS."""
    tables = cache.setdefault(db, {})
    read_at, value = tables.get(table, (None, None))
    if read_at is None or time.monotonic() - read_at >= STATS_SECONDS:
        value = read()
        tables[table] = (time.monotonic(), value)
    return value


def _match_counts(db: Database, table: str, terms: list[str], common: float
                  ) -> dict[str, float]:
    """Rows matching each term that matches any: SQLite counts up to COMMON_ROWS,
    PostgreSQL estimates (and checks that the rare ones, below `common`, match)."""
    if db.dialect != POSTGRESQL:
        counts = {t: _sqlite_count(db, table, t) for t in terms}
        return {t: n for t, n in counts.items() if n}
    estimates = _lexeme_rows(db, table)
    counts = {term: max(estimates.get(lexeme, 0.0) for lexeme in lexemes)
              for term, lexemes in _lexemes_of(db, terms).items() if lexemes}
    rare = [t for t, n in counts.items() if n < common]
    if len(rare) == len(counts):
        return counts  # nothing is dropped: whether they match makes no difference
    found = {row["term"] for row in db.execute(_PG_FOUND.format(t=table), {"terms": rare})}
    return {t: n for t, n in counts.items() if n >= common or t in found}


def _lexemes_of(db: Database, terms: list[str]) -> dict[str, list[str]]:
    known = _lexemes.setdefault(db, {})
    if missing := [t for t in terms if t not in known]:
        if len(known) + len(missing) > KEPT_COUNTS:
            known.clear()
        known.update((row["term"], row["lexemes"])
                     for row in db.execute(_PG_LEXEMES, {"terms": missing}))
    return {t: known[t] for t in terms}


def _sqlite_count(db: Database, table: str, term: str) -> int:
    kept = _counts.setdefault(db, {}).setdefault(table, {})
    now = time.monotonic()
    at, count = kept.get(term, (None, 0))
    if at is None or now - at >= STATS_SECONDS:
        count = db.scalar(_SQLITE_COUNT.format(t=table),
                          {"q": fts.or_match([term]), "common": COMMON_ROWS})
        if count >= KEEP_COUNTS_FROM:
            if len(kept) >= KEPT_COUNTS:
                kept.clear()  # cheaper than tracking age: the frequent terms come back
            kept[term] = (now, count)
    return count


def _lexeme_rows(db: Database, table: str) -> dict[str, float]:
    """Estimated rows per lexeme of `table`'s tsvector (the listed ones), cached."""

    def read() -> dict[str, float]:
        row = db.execute(_PG_STATS, {"t": table}).fetchone()
        return {} if row is None or row["elems"] is None else {
            lexeme: freq * row["reltuples"]
            for lexeme, freq in zip(row["elems"], row["freqs"], strict=False)}

    return _per_minute(_stats, db, table, read)
