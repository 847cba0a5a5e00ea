"""Facts about a user, their extraction history and their vectors (`fact_vec`).

A fact is *live* until it is superseded or its `valid_to` has passed; lists,
`recent` and search return live facts only. `mention_count` and
`last_extracted_at` are derived from `fact_extractions`.

Vectors are optional at every write: pass `embedding=` when the caller has one.
A text change without a new vector deletes the old vector in the same
transaction, so a fact never matches its previous text; backfill
(`unembedded` -> `save_embeddings`) embeds it later. Vector writes are skipped
while vector search is unavailable (no sqlite-vec, dimension CONFLICT):
`chatsvc reindex` rebuilds everything from this table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from store._errors import NotFound, StoreError
from store.clock import new_id, now_iso
from store.contract import Database
from store.sql import GREATEST, in_list, record
from store.vectors import KNN_MAX_K, OwnVectors, Scope, VectorSpec, content_hash

CATEGORIES = ("core", "technical", "project", "transient")
FACT_MAX_CHARS = 2000

# Live = not superseded and not expired; `$now` is bound by every query using it.
LIVE = "f.superseded_by IS NULL AND (f.valid_to IS NULL OR f.valid_to > $now)"
COLUMNS = (
    "f.id, f.user_id, f.category, f.fact, f.created_at, f.updated_at, f.superseded_by, "
    "f.valid_to, (SELECT max(e.extracted_at) FROM fact_extractions e WHERE e.fact_id = f.id)"
    " AS last_extracted_at, (SELECT count(*) FROM fact_extractions e WHERE e.fact_id = f.id)"
    " AS mention_count"
)
VECTORS = VectorSpec(
    table="fact_vec", id_column="fact_id", source="facts f", alias="f", text="f.fact",
    owner="f.user_id", live=LIVE,
)


@dataclass(frozen=True)
class Fact:
    id: str
    user_id: str
    category: str
    fact: str
    created_at: str
    updated_at: str
    last_extracted_at: str | None
    mention_count: int
    superseded_by: str | None
    valid_to: str | None


@dataclass(frozen=True)
class Forget:
    """Facts deleted because the user asked: when, how many, and which message asked
    (None once that message is deleted). What they said is not kept, by design."""

    id: str
    message_id: str | None
    conversation_id: str | None
    facts: int
    forgotten_at: str


@dataclass(frozen=True)
class Evidence:
    """The user's own words a fact rests on: a quote and the message it came from."""

    message_id: str
    conversation_id: str
    quote: str
    said_at: str


@dataclass(frozen=True)
class FactHit:
    """A search result: the fact and its cosine distance to the query (0 = same)."""

    fact: Fact
    distance: float


class InvalidFact(StoreError):
    """A category or text the facts table does not accept; `field` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"invalid value for {field}: {message}")
        self.field = field



def row_to_fact(row) -> Fact:
    return record(Fact, row)

def check_fields(category: str | None, text: str | None) -> str | None:
    """Validate the fields; return the stripped text (None when not given)."""
    if category is not None and category not in CATEGORIES:
        raise InvalidFact("category", f"must be one of {', '.join(CATEGORIES)}")
    if text is None:
        return None
    text = text.strip()
    if not text:
        raise InvalidFact("fact", "must not be empty")
    if len(text) > FACT_MAX_CHARS:
        raise InvalidFact("fact", f"must be at most {FACT_MAX_CHARS} characters")
    return text


class Facts(OwnVectors):
    """SQL for `facts` and `fact_extractions`; vectors through the backend's index of
    `fact_vec`. Implements `Reindexable`."""

    table = VECTORS.table

    def __init__(self, db: Database) -> None:
        self.db = db
        self._vectors = db.vectors(VECTORS)

    # -- plain rows ------------------------------------------------------------------

    def create(
        self, user_id: str, *, category: str, fact: str, embedding: Sequence[float] | None = None
    ) -> Fact:
        text = check_fields(category, fact)
        fact_id, now, digest = new_id(), now_iso(), content_hash(text)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO facts(id, user_id, category, fact, content_hash, created_at, "
                "updated_at) VALUES ($id, $user, $category, $fact, $hash, $now, $now)",
                {"id": fact_id, "user": user_id, "category": category, "fact": text,
                 "hash": digest, "now": now},
            )
            if embedding is not None:
                self._vectors.put(user_id, [(fact_id, embedding, digest)])
        return self.get(user_id, fact_id)

    def get(self, user_id: str, fact_id: str) -> Fact:
        """The fact (live or not); NotFound when missing or another user's."""
        row = self.db.execute(
            f"SELECT {COLUMNS} FROM facts f WHERE f.id = $id AND f.user_id = $user",
            {"id": fact_id, "user": user_id},
        ).fetchone()
        if row is None:
            raise NotFound(f"no fact {fact_id}")
        return row_to_fact(row)

    def list(
        self, user_id: str, *, category: str | None = None, limit: int = 50, offset: int = 0
    ) -> tuple[list[Fact], int]:
        """Live facts, most recently updated first, and the total matching count."""
        check_fields(category, None)
        where = f"f.user_id = $user AND {LIVE}"
        if category is not None:
            where += " AND f.category = $category"
        params = {"user": user_id, "category": category, "now": now_iso(),
                  "limit": limit, "offset": offset}
        total = self.db.scalar(f"SELECT count(*) FROM facts f WHERE {where}", params)
        rows = self.db.execute(
            f"SELECT {COLUMNS} FROM facts f WHERE {where} "
            "ORDER BY f.updated_at DESC, f.id LIMIT $limit OFFSET $offset",
            params,
        ).fetchall()
        return [row_to_fact(row) for row in rows], total

    def recent(self, user_id: str, *, limit: int = 100) -> list[Fact]:
        """Live facts by last activity (latest of update and extraction), newest first."""
        rows = self.db.execute(
            f"SELECT * FROM (SELECT {COLUMNS} FROM facts f WHERE f.user_id = $user AND {LIVE})"
            f" r ORDER BY {GREATEST[self.db.dialect]}(r.updated_at, "
            "coalesce(r.last_extracted_at, '')) DESC, r.id LIMIT $limit",
            {"user": user_id, "now": now_iso(), "limit": limit},
        ).fetchall()
        return [row_to_fact(row) for row in rows]

    def find_live(self, user_id: str, fact: str) -> Fact | None:
        """The user's live fact with exactly this (stripped) text, if any: extraction
        turns a repeated "new" fact into a mention of the existing one."""
        row = self.db.execute(
            f"SELECT {COLUMNS} FROM facts f WHERE f.user_id = $user AND {LIVE} "
            "AND f.content_hash = $hash ORDER BY f.created_at, f.id LIMIT 1",
            {"user": user_id, "now": now_iso(), "hash": content_hash(fact.strip())},
        ).fetchone()
        return row_to_fact(row) if row is not None else None

    def update(
        self,
        user_id: str,
        fact_id: str,
        *,
        category: str | None = None,
        fact: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> Fact:
        """Change category and/or text. `embedding` is the new text's vector, if known."""
        text = check_fields(category, fact)
        current = self.get(user_id, fact_id)
        new_text = current.fact if text is None else text
        new_hash = content_hash(new_text)
        with self.db.transaction():
            self.db.execute(
                "UPDATE facts SET category = $category, fact = $fact, content_hash = $hash, "
                "updated_at = $now WHERE id = $id AND user_id = $user",
                {"category": category or current.category, "fact": new_text, "hash": new_hash,
                 "now": now_iso(), "id": fact_id, "user": user_id},
            )
            if embedding is not None:
                self._vectors.put(user_id, [(fact_id, embedding, new_hash)])
            elif new_text != current.fact:
                self._vectors.drop([fact_id], user_id=user_id)
        return self.get(user_id, fact_id)

    def delete(self, user_id: str, fact_id: str) -> None:
        """Delete the fact, its extraction records and its vector."""
        with self.db.transaction():
            cursor = self.db.execute(
                "DELETE FROM facts WHERE id = $id AND user_id = $user",
                {"id": fact_id, "user": user_id},
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no fact {fact_id}")
            self._vectors.drop([fact_id], user_id=user_id)

    def record_extraction(
        self, fact_id: str, user_id: str, *, message_id: str | None, extracted_at: str
    ) -> None:
        """Note that extraction (re)found this fact: one more mention."""
        with self.db.transaction():
            cursor = self.db.execute(
                "INSERT INTO fact_extractions(fact_id, user_id, message_id, extracted_at) "
                "SELECT id, user_id, $message, $at FROM facts WHERE id = $id AND user_id = $user",
                {"message": message_id, "at": extracted_at, "id": fact_id, "user": user_id},
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no fact {fact_id}")

    # -- evidence ----------------------------------------------------------------------

    def add_evidence(self, user_id: str, fact_id: str, evidence: Sequence[Evidence]) -> None:
        """Record quotes for the user's fact (each message once per fact)."""
        with self.db.transaction():
            known = {e.message_id for e in self.evidence(user_id, [fact_id]).get(fact_id, [])}
            for item in evidence:
                if item.message_id in known:
                    continue
                known.add(item.message_id)
                self.db.execute(
                    "INSERT INTO fact_evidence(fact_id, user_id, message_id, conversation_id, "
                    "quote, said_at) VALUES ($fact, $user, $message, $conversation, $quote, "
                    "$said)",
                    {"fact": fact_id, "user": user_id, "message": item.message_id,
                     "conversation": item.conversation_id, "quote": item.quote,
                     "said": item.said_at},
                )

    def evidence(self, user_id: str, fact_ids: Sequence[str]) -> dict[str, list[Evidence]]:
        """The quotes of each of the user's facts, in the order they were recorded."""
        found: dict[str, list[Evidence]] = {}
        for start in range(0, len(fact_ids), 500):  # bound the IN list
            ids = list(fact_ids[start:start + 500])
            marks = ", ".join(f"$f{n}" for n in range(len(ids)))
            rows = self.db.execute(
                "SELECT fact_id, message_id, conversation_id, quote, said_at FROM fact_evidence "
                f"WHERE user_id = $user AND fact_id IN ({marks}) ORDER BY id",
                {"user": user_id, **{f"f{n}": i for n, i in enumerate(ids)}},
            ).fetchall()
            for row in rows:
                found.setdefault(row["fact_id"], []).append(Evidence(
                    row["message_id"], row["conversation_id"], row["quote"], row["said_at"]))
        return found

    def forget_conversation(self, user_id: str, conversation_id: str) -> list[str]:
        """Before a conversation is deleted: delete the facts whose every quote was in
        it (their vectors too), and its quotes of facts that rest on others as well.
        Facts without evidence (saved by hand) stay. Returns the deleted facts' ids."""
        return self._forget(user_id, "{e}.conversation_id = $conversation",
                            {"conversation": conversation_id})

    def forget_abandoned(self, user_id: str, conversation_id: str) -> list[str]:
        """After the conversation's visible branch changed (store.branches): the same
        for the quotes of its messages now off that branch."""
        return self._forget(user_id, (
            "{e}.message_id IN (SELECT id FROM messages WHERE conversation_id = $conversation "
            "AND user_id = $user AND off_branch = 1)"), {"conversation": conversation_id})

    def _forget(self, user_id: str, gone: str, params: dict) -> list[str]:
        """Delete the quotes matching `gone` (SQL over the quote alias `{e}`) and the facts
        left without any; the ids of those facts."""
        params = {**params, "user": user_id}
        with self.db.transaction():
            doomed = [row["fact_id"] for row in self.db.execute(
                "SELECT DISTINCT e.fact_id FROM fact_evidence e WHERE e.user_id = $user "
                f"AND {gone.format(e='e')} AND NOT EXISTS (SELECT 1 FROM fact_evidence o "
                f"WHERE o.fact_id = e.fact_id AND NOT ({gone.format(e='o')})) "
                "ORDER BY e.fact_id", params,
            ).fetchall()]
            for fact_id in doomed:
                self.db.execute("DELETE FROM facts WHERE id = $id AND user_id = $user",
                                {"id": fact_id, "user": user_id})
            if doomed:
                self._vectors.drop(doomed, user_id=user_id)
            self.db.execute("DELETE FROM fact_evidence WHERE user_id = $user "
                            f"AND {gone.format(e='fact_evidence')}", params)
        return doomed

    def record_forget(self, user_id: str, *, message_id: str | None, facts: int) -> None:
        self.db.execute(
            "INSERT INTO fact_forgets(id, user_id, message_id, facts, forgotten_at) "
            "VALUES ($id, $user, $message, $facts, $now)",
            {"id": new_id(), "user": user_id, "message": message_id, "facts": facts,
             "now": now_iso()},
        )

    def forgets(self, user_id: str, *, limit: int | None = 100) -> list[Forget]:
        """The user's forget requests that deleted facts, newest first (all: None)."""
        rows = self.db.execute(
            "SELECT g.id, g.message_id, m.conversation_id, g.facts, g.forgotten_at "
            "FROM fact_forgets g LEFT JOIN messages m ON m.id = g.message_id "
            "WHERE g.user_id = $user ORDER BY g.forgotten_at DESC, g.id"
            + ("" if limit is None else " LIMIT $limit"),
            {"user": user_id} | ({} if limit is None else {"limit": limit}),
        ).fetchall()
        return [record(Forget, row) for row in rows]

    def supersede(self, old_id: str, *, by_id: str, at: str) -> None:
        """Mark `old_id` replaced by `by_id` (same user) from `at`; its vector goes."""
        with self.db.transaction():
            cursor = self.db.execute(
                "UPDATE facts SET superseded_by = $by, valid_to = $at WHERE id = $old "
                "AND id != $by AND user_id = (SELECT user_id FROM facts WHERE id = $by)",
                {"old": old_id, "by": by_id, "at": at},
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no fact {old_id} of the same user as {by_id}")
            user_id = self.db.scalar("SELECT user_id FROM facts WHERE id = $id", {"id": old_id})
            self._vectors.drop([old_id], user_id=user_id)

    def search_by_vector(
        self, user_id: str, vector: Sequence[float], *, limit: int = 10,
        max_distance: float = 1.0,
    ) -> list[FactHit]:
        """The user's live facts nearest to `vector`, closest first, within max_distance."""
        now = now_iso()
        found = self._vectors.nearest_rows(
            vector, k=min(KNN_MAX_K, max(1, limit)), columns=COLUMNS,
            scope=Scope(user_id=user_id, where=f"f.user_id = $user AND {LIVE}",
                        params={"user": user_id, "now": now}))
        return [FactHit(row_to_fact(row), distance) for row, distance in found
                if distance <= max_distance]

    def cited(self, user_id: str, vector: Sequence[float], *, k: int) -> list[tuple[str, float]]:
        """(message id, cosine similarity of its nearest fact) for the messages that the
        user's `k` live facts nearest `vector` quote, best first: conversation search's
        fact keys (store.recall). A fact deleted, superseded or expired, or a quote
        removed with its conversation or branch, stops citing at once: nothing is copied."""
        found = self._vectors.nearest_rows(
            vector, k=min(KNN_MAX_K, max(1, k)), columns="f.id",
            scope=Scope(user_id=user_id, where=f"f.user_id = $user AND {LIVE}",
                        params={"user": user_id, "now": now_iso()}))
        return self.quoted(user_id, [(row["id"], 1.0 - distance) for row, distance in found])

    def quoted(self, user_id: str, nearest: Sequence[tuple[str, float]]
               ) -> list[tuple[str, float]]:
        """What `cited` makes of facts found already ((fact id, cosine similarity), e.g.
        a chat turn's related facts): the messages they quote, best first."""
        similarity = dict(nearest)
        if not similarity:
            return []
        ids, params = in_list("fact", similarity)
        best: dict[str, float] = {}
        for row in self.db.execute("SELECT fact_id, message_id FROM fact_evidence WHERE "
                                   f"user_id = $user AND fact_id IN {ids}",
                                   {**params, "user": user_id}):
            score = similarity[row["fact_id"]]
            best[row["message_id"]] = max(best.get(row["message_id"], score), score)
        return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))

    def vector_count(self, user_id: str | None = None) -> int:
        return self._vectors.count(user_id)
