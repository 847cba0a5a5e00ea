"""Generate and read fact sheets: store I/O around the pure scoring in `_scoring`.

These functions block (SQLite); async callers run them through `in_thread`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from chatsvc.fact_sheet._scoring import (
    RECENT_EXTRACTIONS,
    Candidate,
    SheetEntry,
    build_sheet,
    canonical_json,
)
from store import FactSheetStore, NotFound
from store.clock import parse_iso
from store.fact_sheets import FactSheet


def build_entries(
    sheets: FactSheetStore, user_id: str, *, now: datetime, exclude: frozenset[str] = frozenset()
) -> list[SheetEntry]:
    """The sheet for the user's live facts as of `now`, without the facts in `exclude`."""
    inputs = sheets.inputs(user_id, records_limit=RECENT_EXTRACTIONS, now=now)
    candidates = [Candidate(*row) for row in inputs.facts if row[0] not in exclude]
    records = [(fact_id, parse_iso(at)) for fact_id, at in inputs.records]
    return build_sheet(candidates, records, now)


def save_entries(
    sheets: FactSheetStore,
    user_id: str,
    entries: list[SheetEntry],
    *,
    now: datetime,
    dedup_log: list[str] | None = None,
) -> FactSheet:
    """Save the sheet (canonical JSON) and apply retention."""
    return sheets.save(
        user_id, facts_json=canonical_json(entries), fact_count=len(entries),
        dedup_log=None if dedup_log is None else json.dumps(dedup_log), now=now,
    )


def generate(sheets: FactSheetStore, user_id: str, *, now: datetime) -> FactSheet:
    """Score the user's live facts as of `now`, save the sheet, apply retention.
    Replicas generating the same user's sheet take turns (the database's job lock)."""
    with sheets.db.job_lock("fact_sheet", user_id, wait=True):
        return save_entries(sheets, user_id, build_entries(sheets, user_id, now=now), now=now)


def sheet_json(sheet: FactSheet | None) -> dict:
    """The API shape of a sheet; an empty sheet when there is none yet."""
    if sheet is None:
        return {"id": None, "facts": [], "created_at": None, "fact_count": 0, "dedup_log": None}
    return {
        "id": sheet.id,
        "facts": json.loads(sheet.facts_json),
        "created_at": sheet.created_at,
        "fact_count": sheet.fact_count,
        "dedup_log": json.loads(sheet.dedup_log) if sheet.dedup_log is not None else None,
    }


@dataclass(frozen=True)
class ContextFacts:
    """What the chat context needs: the sheet id (for snapshot pinning) and its entries."""

    sheet_id: str | None
    entries: list[dict[str, str]]  # [{"id", "category", "fact"}] in sheet order


def context_facts(
    sheets: FactSheetStore, user_id: str, *, pinned_id: str | None = None
) -> ContextFacts:
    """The pinned sheet if it still exists, else the latest; no sheet -> no entries."""
    sheet = None
    if pinned_id is not None:
        try:
            sheet = sheets.get(user_id, pinned_id)
        except NotFound:  # pruned by retention: fall back to the latest
            sheet = None
    sheet = sheet or sheets.latest(user_id)
    if sheet is None:
        return ContextFacts(None, [])
    entries = [{"id": e["id"], "category": e["category"], "fact": e["fact"]}
               for e in json.loads(sheet.facts_json)]
    return ContextFacts(sheet.id, entries)
