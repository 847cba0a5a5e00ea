"""Blocking steps of one extraction batch: the known facts, and applying an answer.

`apply` writes everything of a batch in one transaction (facts, mentions,
supersessions, the messages' processed mark), so a batch is applied once or not
at all. Run these through `in_thread`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from chatsvc.extraction._prompt import Extraction, KnownFact
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


def provenance(messages: list[PendingMessage]) -> PendingMessage:
    """The message mentions are attributed to: the batch's last user message."""
    users = [m for m in messages if m.role == "user"]
    return (users or messages)[-1]


def apply(
    db: Database,
    facts: FactStore,
    queue: ExtractionQueueStore,
    *,
    user_id: str,
    messages: list[PendingMessage],
    known: list[KnownFact],
    extraction: Extraction,
    now: datetime,
) -> Applied:
    by_ref = {k.ref: k for k in known}
    source = provenance(messages)
    applied = Applied()
    with db.transaction():
        queue.mark_processed([m.id for m in messages], at=now)
        targets: list[str] = []  # fact id per new_facts index
        mentioned: dict[str, None] = {}
        for category, text in extraction.new_facts:
            existing = facts.find_live(user_id, text)
            if existing is None:
                existing = facts.create(user_id, category=category, fact=text)
                applied.created.append(existing)
            else:
                mentioned[existing.id] = None
            targets.append(existing.id)
        for ref in extraction.referenced:
            mentioned[by_ref[ref].id] = None
        for fact_id in [f.id for f in applied.created] + list(mentioned):
            try:
                facts.record_extraction(fact_id, user_id, message_id=source.id,
                                        extracted_at=source.created_at)
            except NotFound:  # deleted by the user while the LLM was thinking
                mentioned.pop(fact_id, None)
        applied.referenced = len(mentioned)
        for ref, index in extraction.superseded:
            applied.superseded += _supersede(facts, user_id, by_ref[ref].id, targets[index],
                                             source.created_at)
    return applied


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
