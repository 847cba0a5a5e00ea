"""Blocking steps of one extraction batch: the known facts, and applying an answer.

`apply` writes everything of a batch in one transaction (facts, mentions,
supersessions, the messages' processed mark), so a batch is applied once or not
at all. Run these through `in_thread`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from chatsvc.extraction._grounding import Checked, Grounded
from chatsvc.extraction._prompt import Extraction, KnownFact
from chatsvc.extraction._support import support
from store import Database, ExtractionQueueStore, FactSheetStore, FactStore, NotFound
from store.clock import iso
from store.extraction import PendingMessage
from store.facts import Fact

RECENT_FACTS = 30


def _live(fact: Fact, now: str) -> bool:
    return fact.superseded_by is None and (fact.valid_to is None or fact.valid_to > now)


def known_facts(
    facts: FactStore, sheets: FactSheetStore, user_id: str, *, now: datetime
) -> list[KnownFact]:
    """The latest sheet's facts merged by id with the most recent facts; live ones only."""
    sheet = sheets.latest(user_id)
    sheet_ids = [entry["id"] for entry in json.loads(sheet.facts_json)] if sheet else []
    merged: dict[str, Fact] = {}
    for fact_id in sheet_ids:
        try:
            fact = facts.get(user_id, fact_id)
        except NotFound:  # deleted since the sheet was made
            continue
        if _live(fact, iso(now)):
            merged[fact.id] = fact
    for fact in facts.recent(user_id, limit=RECENT_FACTS):
        merged.setdefault(fact.id, fact)
    return [KnownFact(f"f{n}", f.id, f.category, f.fact) for n, f in enumerate(merged.values(), 1)]


@dataclass
class Applied:
    created: list[Fact] = field(default_factory=list)
    referenced: int = 0
    superseded: int = 0
    forgotten: int = 0


def apply(
    db: Database,
    facts: FactStore,
    queue: ExtractionQueueStore,
    *,
    user_id: str,
    messages: list[PendingMessage],
    known: list[KnownFact],
    extraction: Extraction,
    checked: Checked,
    vectors: list[list[float] | None],
    now: datetime,
    duplicate_distance: float,
) -> Applied:
    """Store the verified facts of one batch (`checked.facts`, `vectors` their
    embeddings or None each): a fact that repeats a live one becomes a mention of it
    with its quotes added; then the answer's references, supersessions and forgets."""
    by_ref = {k.ref: k for k in known}
    applied = Applied()
    with db.transaction():
        queue.mark_processed([m.id for m in messages], at=now)
        targets: list[str] = []  # fact id per checked.facts index
        mentioned: dict[str, str | None] = {}  # fact id -> the message it was seen in
        for grounded, vector in zip(checked.facts, vectors, strict=True):
            existing = _duplicate(facts, user_id, grounded, vector, duplicate_distance)
            if existing is None:
                existing = facts.create(user_id, category=grounded.category,
                                        fact=grounded.fact, embedding=vector)
                applied.created.append(existing)
            facts.add_evidence(user_id, existing.id, grounded.evidence)
            mentioned.setdefault(existing.id, grounded.evidence[0].message_id)
            targets.append(existing.id)
        for ref in extraction.referenced:
            mentioned.setdefault(by_ref[ref].id, None)
        said_at = _last_user_time(messages)
        created = {fact.id for fact in applied.created}
        for fact_id, message_id in mentioned.items():
            try:
                facts.record_extraction(fact_id, user_id, message_id=message_id,
                                        extracted_at=said_at)
            except NotFound:  # deleted by the user while the LLM was thinking
                continue
            applied.referenced += fact_id not in created  # a new fact is no re-mention
        for ref, index in extraction.superseded:
            if (position := checked.positions.get(index)) is not None:
                applied.superseded += _supersede(facts, user_id, by_ref[ref].id,
                                                 targets[position], said_at)
        forgotten = sum(_forget(facts, user_id, by_ref[ref].id) for ref in checked.forget)
        if forgotten:
            facts.record_forget(user_id, message_id=checked.forget_asked_in, facts=forgotten)
        applied.forgotten = forgotten
    return applied


def _duplicate(facts: FactStore, user_id: str, grounded: Grounded,
               vector: list[float] | None, max_distance: float) -> Fact | None:
    """The live fact this one repeats: the same text, or (with a vector) the nearest
    fact of the same category within `max_distance` that names the same numbers, names
    and dates (an embedding hardly tells "since 2001" from "since 2003")."""
    same = facts.find_live(user_id, grounded.fact)
    if same is not None or vector is None or not facts.db.vector_state.ok:
        return same
    hits = facts.search_by_vector(user_id, vector, limit=5, max_distance=max_distance)
    return next((h.fact for h in hits if h.fact.category == grounded.category
                 and _same_particulars(h.fact.fact, grounded.fact)), None)


def _same_particulars(one: str, other: str) -> bool:
    return not support(one, [other]).missing and not support(other, [one]).missing


def _last_user_time(messages: list[PendingMessage]) -> str:
    users = [m for m in messages if m.role == "user"]
    return (users or messages)[-1].created_at


def _forget(facts: FactStore, user_id: str, fact_id: str) -> int:
    try:
        facts.delete(user_id, fact_id)
    except NotFound:
        return 0
    return 1


def _supersede(facts: FactStore, user_id: str, old_id: str, new_id: str, at: str) -> int:
    """Supersede only the named fact, only if it is still live; 1 if done."""
    if old_id == new_id:
        return 0
    try:
        if not _live(facts.get(user_id, old_id), at):
            return 0
        facts.supersede(old_id, by_id=new_id, at=at)
    except NotFound:
        return 0
    return 1
