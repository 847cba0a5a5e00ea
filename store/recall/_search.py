"""Search over one user's indexed messages: keyword, semantic and hybrid (score fusion,
neighbouring turns sharing a match), with optional date bounds (`after` inclusive,
`before` exclusive, ISO-8601 UTC).

Besides its own key, a message has a key for each of the user's live facts that quotes
it (`FactKeys`): in the semantic ranking a message scores its nearest key (LongMemEval's
K = V + fact), so a question phrased like the fact finds the turn that said it. The
fact's own vector is that key, read where it lies (`fact_vec`, `fact_evidence`): nothing
is written per message or per fact, and it follows the fact's life by construction."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from store.contract import Database
from store.hybrid import Ranking, both_rankings, convex_merge, keyword_ranking, pool_for
from store.recall._names import names_in
from store.sql import in_list, record, visible
from store.vectors import KNN_MAX_K, Scope, VectorIndex

# Typed, so PostgreSQL can bind a NULL bound server-side.
_DATED = ("(CAST($after AS TEXT) IS NULL OR k.created_at >= $after) "
          "AND (CAST($before AS TEXT) IS NULL OR k.created_at < $before)")
_IN_RANGE = f"k.user_id = $user AND {_DATED}"
# {matches}: the ranked keyword candidates (store/hybrid.py), keyed by message_index.seq,
# each one the user's own already (_OWN_ROWS). No user_id condition here: given one,
# SQLite walked the user's whole index to meet the candidates (16 ms instead of 7 at
# 100k messages, evals/conversation_search_bench).
_KEYWORD_SQL = (
    "SELECT k.id, r.score FROM ({matches}) r JOIN message_index k ON k.seq = r.rowid "
    f"WHERE {_DATED} ORDER BY r.score DESC, k.seq LIMIT $limit"
)
# The keyword candidates are the user's own rows: every user's messages share one FTS table.
# EXISTS, a key lookup per match visited: with `rowid IN (SELECT ...)` SQLite runs one FTS
# query per row of the user (minutes at 100k; +3 ms at 100k matches with EXISTS).
_OWN_ROWS = ("EXISTS (SELECT 1 FROM message_index o WHERE o.seq = message_fts.rowid "
             "AND o.user_id = $user)")
# The messages right before and after each of {ids} in its conversation (NULL at an end).
_NEIGHBOURS_SQL = (
    "SELECT m.id, (SELECT p.id FROM messages p WHERE p.conversation_id = m.conversation_id "
    "AND p.seq < m.seq ORDER BY p.seq DESC LIMIT 1) AS previous_id, "
    "(SELECT n.id FROM messages n WHERE n.conversation_id = m.conversation_id "
    "AND n.seq > m.seq ORDER BY n.seq LIMIT 1) AS next_id FROM messages m WHERE m.id IN {ids}"
)
# The names the user's messages were written under, one index seek each
# (messages_speaker): a loose index scan, whatever the number of messages.
_SPEAKERS_SQL = (
    "WITH RECURSIVE speaker(name) AS (SELECT min(name) FROM messages "
    "WHERE user_id = $user AND name IS NOT NULL UNION ALL SELECT (SELECT min(m.name) "
    "FROM messages m WHERE m.user_id = $user AND m.name > s.name) FROM speaker s "
    "WHERE s.name IS NOT NULL) SELECT name FROM speaker WHERE name IS NOT NULL LIMIT $most"
)
# Speakers read for a question at most: a group chat has a few dozen.
MOST_SPEAKERS = 200
# The share of a message's hybrid score each neighbour gains: what answers a question is
# often the turn after the one that matches it, or the one before. Measured in
# evals/results/recall_neighbours.md (0.1 to 0.3 gained on both datasets; 0.2 shipped).
NEIGHBOUR_SHARE = 0.2
# Only the best `LIFTERS x limit` messages of a ranking (at least 30) pass a share to their
# neighbours: the lookup cost ~15 us a message, 2.3 ms for the ~135 a hybrid search
# ranks, and a message below them lifts its neighbours by too little to reach the top.
# Measured on the recall harness's rankings: recall@10 unchanged within 0.003.
LIFTERS = 3
# Each ranking's best two messages come first in hybrid search: when one ranking finds
# the answer and the other misses it (the small embedder's near-ties, a question sharing
# no word with its answer), the average alone (at most 0.5 for it) buried it under
# messages both placed fairly high. Measured in evals/results/recall_head.md (2 gained on
# both datasets it was chosen on, 3 only on LoCoMo; even on two held-out conversations).
RANKING_HEAD = 2
# What a message written within the time a question names (`prefer`) adds to its score
# (0..1) before the scores are scaled back into 0..1: a preference, not a filter (the
# date words may describe the event, not the message). Measured in
# evals/results/recall_time_and_parts.md.
PREFERENCE = 0.2
# What a message gains when the question names its speaker ("What does Melanie do to
# destress?" in an imported group chat: the answer is mostly in Melanie's own turns).
# Measured in evals/results/recall_speakers.md.
SPEAKER_PREFERENCE = 0.1


@dataclass(frozen=True)
class MessageHit:
    message_id: str
    conversation_id: str
    role: str
    name: str | None
    content: str
    created_at: str
    score: float  # higher is better; comparable within one answer only


@dataclass(frozen=True)
class Bounds:
    """Which of a user's messages a search may return."""

    user_id: str
    after: str | None = None
    before: str | None = None

    @property
    def params(self) -> dict:
        return {"user": self.user_id, "after": self.after, "before": self.before}


class FactKeys(Protocol):
    def cited(self, user_id: str, vector: Sequence[float], *, k: int
              ) -> list[tuple[str, float]]:
        """(message id, similarity of its nearest fact) of the facts nearest `vector`."""
        ...

    def quoted(self, user_id: str, nearest: Sequence[tuple[str, float]]
               ) -> list[tuple[str, float]]:
        """The same for the facts `nearest` ((fact id, similarity)), found already."""
        ...


class Searching:
    """The search half of `MessageIndex`."""

    db: Database
    _vectors: VectorIndex
    _facts: FactKeys | None  # None: messages have their own keys only

    def keyword(self, query: str, bounds: Bounds, *, limit: int = 10,
                prefer: Bounds | None = None) -> list[MessageHit]:
        """Full-text ranking (any query text is safe) of max(5 x limit, 50) matches, their
        BM25 (ts_rank) scaled to 0..1, then `with_neighbours` among those matches only
        (the best 3 x limit lift theirs), then `prefer`'s messages raised (`_preferred`):
        every hit matches the query."""
        matches = convex_merge([self._keyword_ranking(query, bounds, pool_for(limit))])
        lifted = self._lifted(matches, limit, only_ranked=True)
        return self._hits(self._preferred(lifted, query, prefer)[:limit], bounds)

    def semantic(self, vector: Sequence[float], bounds: Bounds, *, limit: int = 10
                 ) -> list[MessageHit]:
        """Nearest keys (score = cosine similarity); VectorUnavailable when vectors cannot run."""
        return self._hits(self._semantic_ranking(vector, bounds, limit), bounds)[:limit]

    def hybrid(self, query: str, vector: Sequence[float], bounds: Bounds, *, limit: int = 10,
               pool: int | None = None, keyword: Ranking | None = None,
               prefer: Bounds | None = None,
               facts: Sequence[tuple[str, float]] | None = None) -> list[MessageHit]:
        """Keyword and semantic rankings (`pool` each, default max(5 x limit, 50)) merged
        by `convex_merge`, then `with_neighbours` (score 0..1; the best 3 x limit lift
        theirs), then `prefer`'s messages raised (`_preferred`); bounds apply before the
        cut. `keyword`: the keyword half, taken ahead by `hybrid_keyword` with the same
        arguments (a chat turn does, while it embeds). `facts`: the user's live facts
        nearest `vector`, (fact id, similarity) best first, at least `pool` of them or all
        there are, found already (a chat turn's related facts): the fact keys come from
        them instead of a second search of the same facts."""
        pool = pool or pool_for(limit)
        rankings = both_rankings(
            self.db,
            lambda: self._keyword_ranking(query, bounds, pool) if keyword is None else keyword,
            lambda: self._semantic_ranking(vector, bounds, pool, facts))
        ranking = self._preferred(self._lifted(convex_merge(rankings, head=RANKING_HEAD), limit),
                                  query, prefer)
        # Both rankings hold only messages within bounds (a vector of a message deleted
        # since the copy loaded may remain), a neighbour may lie outside them: rows for
        # three times the limit are plenty.
        return self._hits(ranking[: limit * 3], bounds)[:limit]

    def hybrid_keyword(self, query: str, bounds: Bounds, *, limit: int = 10,
                       pool: int | None = None) -> Ranking:
        """The keyword ranking `hybrid` with these arguments merges, for its `keyword`."""
        return self._keyword_ranking(query, bounds, pool or pool_for(limit))

    def speakers(self, user_id: str) -> list[str]:
        """The names the user's messages were written under (imported group chats)."""
        return [row["name"] for row in self.db.execute(
            _SPEAKERS_SQL, {"user": user_id, "most": MOST_SPEAKERS})]

    def _lifted(self, ranking: Ranking, limit: int, *, only_ranked: bool = False) -> Ranking:
        lifters = ranking[:max(LIFTERS * limit, 30)]
        neighbours = self._neighbours([message_id for message_id, _ in lifters])
        return with_neighbours(ranking, neighbours, only_ranked=only_ranked)

    def _preferred(self, ranking: Ranking, query: str, prefer: Bounds | None) -> Ranking:
        """`ranking` after the messages within `prefer`'s dates gained PREFERENCE and those
        of a speaker `query` names SPEAKER_PREFERENCE, scaled back into 0..1."""
        if not ranking:
            return ranking
        message_ids = [message_id for message_id, _ in ranking]
        inside = (self._dated(message_ids, prefer) or set()) if prefer is not None else set()
        named = self._named(message_ids, query)
        if prefer is None and not named:
            return ranking
        top = 1 + PREFERENCE * (prefer is not None) + SPEAKER_PREFERENCE * bool(named)
        return sorted(((mid, (score + PREFERENCE * (mid in inside)
                              + SPEAKER_PREFERENCE * (mid in named)) / top)
                       for mid, score in ranking), key=lambda pair: (-pair[1], pair[0]))

    def _named(self, message_ids: list[str], query: str) -> set[str]:
        """Those of `message_ids` whose speaker's name `query` names (`names_in`)."""
        ids, params = in_list("id", message_ids)
        rows = list(self.db.execute(
            "SELECT k.id, m.name FROM message_index k JOIN messages m ON m.seq = k.seq "
            f"WHERE k.id IN {ids} AND m.name IS NOT NULL", params))
        names = names_in(query, {row["name"] for row in rows})
        return {row["id"] for row in rows if row["name"] in names}

    def _neighbours(self, message_ids: list[str]) -> dict[str, tuple[str | None, str | None]]:
        """message id -> (the message before it, the one after) in its conversation."""
        if not message_ids:
            return {}
        ids, params = in_list("id", message_ids)
        rows = self.db.execute(_NEIGHBOURS_SQL.format(ids=ids), params)
        return {row["id"]: (row["previous_id"], row["next_id"]) for row in rows}

    def _keyword_ranking(self, query: str, bounds: Bounds, limit: int) -> Ranking:
        return keyword_ranking(self.db, query, {**bounds.params, "limit": limit},
                               table="message_fts", sql=_KEYWORD_SQL, own=_OWN_ROWS)

    def _semantic_ranking(self, vector: Sequence[float], bounds: Bounds, limit: int,
                          facts: Sequence[tuple[str, float]] | None = None) -> Ranking:
        return self._with_fact_keys(self._own_keys(vector, bounds, limit), vector, bounds,
                                    limit, facts)

    def _with_fact_keys(self, ranking: Ranking, vector: Sequence[float], bounds: Bounds,
                        limit: int, facts: Sequence[tuple[str, float]] | None) -> Ranking:
        """`ranking` with each message cited by one of the user's `limit` facts nearest
        `vector` (`facts`' first when given) scored by its nearest key, cut to its length
        again (at least `limit`): a longer ranking would shift the min-max scaling of
        `convex_merge`."""
        if self._facts is None:
            cited = []
        elif facts is not None:
            cited = self._facts.quoted(bounds.user_id, facts[:limit])
        else:
            cited = self._facts.cited(bounds.user_id, vector, k=limit)
        if not cited:
            return ranking
        inside = self._dated([message_id for message_id, _ in cited], bounds)
        scores = dict(ranking)
        for message_id, similarity in cited:
            if inside is None or message_id in inside:
                scores[message_id] = max(scores.get(message_id, similarity), similarity)
        merged = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
        return merged[:max(len(ranking), limit)]

    def _own_keys(self, vector: Sequence[float], bounds: Bounds, limit: int) -> Ranking:
        """Nearest first. SQLite's in-memory copy knows only the user: with dates, the
        neighbours outside them are dropped and the search widens until `limit` are left."""
        scope = Scope(user_id=bounds.user_id, where=_IN_RANGE, params=bounds.params)
        k = min(KNN_MAX_K, limit * 2 + 10)
        while True:
            found = self._vectors.nearest(vector, k=k, scope=scope)
            inside = self._dated([message_id for message_id, _, _ in found], bounds)
            ranking = [(mid, 1.0 - distance) for mid, distance, _ in found
                       if inside is None or mid in inside]
            if len(ranking) >= limit or len(found) < k or k == KNN_MAX_K:
                return ranking
            k = min(KNN_MAX_K, widened(k, limit, len(ranking)))

    def _dated(self, message_ids: list[str], bounds: Bounds) -> set[str] | None:
        """Those of `message_ids` within the dates of `bounds` (None: it has none)."""
        if bounds.after is None and bounds.before is None:
            return None
        if not message_ids:
            return set()
        ids, params = in_list("id", message_ids)
        rows = self.db.execute(f"SELECT k.id, {visible(_IN_RANGE)} FROM message_index k "
                               f"WHERE k.id IN {ids}", {**params, **bounds.params})
        return {row["id"] for row in rows if row["visible"]}

    def _rows(self, message_ids: list[str], bounds: Bounds) -> dict:
        """message id -> row, for those that exist, lie within `bounds` and are on their
        conversation's visible branch (store.branches: an abandoned branch is not recalled)."""
        if not message_ids:
            return {}
        ids, params = in_list("id", message_ids)
        # Bounds as a column, not in WHERE: given `id IN (...) AND user_id = ?` SQLite
        # walks the user's index over all their messages instead of looking the ids up.
        rows = self.db.execute(
            "SELECT m.id AS message_id, m.conversation_id, m.role, m.name, m.content, "
            f"m.created_at, {visible(_IN_RANGE)} FROM message_index k "
            f"JOIN messages m ON m.seq = k.seq WHERE k.id IN {ids} AND m.off_branch = 0",
            {**params, **bounds.params})
        return {row["message_id"]: row for row in rows if row["visible"]}

    def _hits(self, ranking: Ranking, bounds: Bounds) -> list[MessageHit]:
        """The ranked messages that exist and lie within `bounds`, in ranking order."""
        rows = self._rows([message_id for message_id, _ in ranking], bounds)
        return [record(MessageHit, rows[mid], score=score) for mid, score in ranking
                if mid in rows]


def widened(k: int, limit: int, inside: int) -> int:
    """The next `k` of a search whose `k` nearest held `inside` within its dates: enough
    for `limit` at that share, a quarter more for its noise, at most 8 x `k`. A fixed 8 x
    turned a range holding half the messages into a second search of 880 neighbours
    (evals/conversation_search_bench, "hybrid, after a date")."""
    if inside == 0:
        return k * 8
    return min(k * 8, math.ceil(limit * k / inside * 1.25))  # inside < limit: > k


def with_neighbours(ranking: Ranking, neighbours: dict[str, tuple[str | None, str | None]],
                    *, share: float = NEIGHBOUR_SHARE, only_ranked: bool = False) -> Ranking:
    """`ranking` (scores 0..1) after each message passed `share` of its score to the
    messages before and after it (`only_ranked`: those in `ranking`), rescaled to stay
    within 0..1; ties by id."""
    scores = dict(ranking)
    for message_id, score in ranking:
        for neighbour in neighbours.get(message_id, ()):
            if neighbour is not None and (neighbour in scores or not only_ranked):
                scores[neighbour] = scores.get(neighbour, 0.0) + share * score
    top = 1.0 + 2 * share  # a message and both its neighbours scoring 1
    return sorted(((mid, score / top) for mid, score in scores.items()),
                  key=lambda pair: (-pair[1], pair[0]))
