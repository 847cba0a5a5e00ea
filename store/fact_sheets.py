"""Fact sheets: stored snapshots of a user's scored top facts, and the sheet's inputs.

Sheets are kept 7 days; the latest one is always kept, however old, because the
chat context and the extraction job read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from store._errors import NotFound
from store.clock import iso, new_id
from store.contract import Database
from store.facts import LIVE as LIVE_FACT
from store.sql import record

RETENTION = timedelta(days=7)
# Newest first; rowid breaks ties between sheets written in the same microsecond.
_NEWEST_FIRST = "ORDER BY created_at DESC, rowid DESC"


@dataclass(frozen=True)
class FactSheet:
    id: str
    user_id: str
    facts_json: str
    dedup_log: str | None
    fact_count: int
    created_at: str


@dataclass(frozen=True)
class SheetInputs:
    """Active facts as (id, category, fact) and recent extraction records as
    (fact_id, extracted_at), newest first, read in one snapshot."""

    facts: list[tuple[str, str, str]]
    records: list[tuple[str, str]]


def _row_to_sheet(row) -> FactSheet:
    return record(FactSheet, row)

def _prune(db: Database, user_id: str, now: datetime) -> int:
    cursor = db.execute(
        "DELETE FROM fact_sheets WHERE user_id = $user AND created_at < $before AND id != "
        f"(SELECT id FROM fact_sheets WHERE user_id = $user {_NEWEST_FIRST} LIMIT 1)",
        {"user": user_id, "before": iso(now - RETENTION)},
    )
    return cursor.rowcount


class FactSheets:
    def __init__(self, db: Database) -> None:
        self.db = db

    def inputs(self, user_id: str, *, records_limit: int, now: datetime) -> SheetInputs:
        """What scoring needs: facts live at `now` and the user's `records_limit` most
        recent extraction records (of any fact: superseded ones still use up the window)."""
        with self.db.transaction():  # one snapshot for both reads
            facts = self.db.fetch(
                f"SELECT f.id, f.category, f.fact FROM facts f WHERE f.user_id = $user "
                f"AND {LIVE_FACT} ORDER BY f.id",
                {"user": user_id, "now": iso(now)}, lambda *row: row,
            )
            records = self.db.fetch(
                "SELECT fact_id, extracted_at FROM fact_extractions WHERE user_id = $user "
                "ORDER BY extracted_at DESC, id DESC LIMIT $limit",
                {"user": user_id, "limit": records_limit}, lambda *row: row,
            )
        return SheetInputs(facts, records)

    def save(
        self,
        user_id: str,
        *,
        facts_json: str,
        fact_count: int,
        dedup_log: str | None,
        now: datetime,
    ) -> FactSheet:
        """Insert a sheet created at `now`, then drop this user's sheets older than the
        retention period except the latest."""
        sheet_id = new_id()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO fact_sheets(id, user_id, facts_json, dedup_log, fact_count, "
                "created_at) VALUES ($id, $user, $facts, $log, $count, $now)",
                {"id": sheet_id, "user": user_id, "facts": facts_json, "log": dedup_log,
                 "count": fact_count, "now": iso(now)},
            )
            _prune(self.db, user_id, now)
        return self.get(user_id, sheet_id)

    def prune(self, user_id: str, *, now: datetime) -> int:
        """Delete the user's sheets older than the retention period, except the latest."""
        with self.db.transaction():
            return _prune(self.db, user_id, now)

    def latest(self, user_id: str) -> FactSheet | None:
        row = self.db.execute(
            f"SELECT * FROM fact_sheets WHERE user_id = $user {_NEWEST_FIRST} LIMIT 1",
            {"user": user_id},
        ).fetchone()
        return _row_to_sheet(row) if row is not None else None

    def get(self, user_id: str, sheet_id: str) -> FactSheet:
        """The user's sheet `sheet_id`; another user's id is NotFound like a missing one."""
        row = self.db.execute(
            "SELECT * FROM fact_sheets WHERE id = $id AND user_id = $user",
            {"id": sheet_id, "user": user_id},
        ).fetchone()
        if row is None:
            raise NotFound(f"no fact sheet {sheet_id}")
        return _row_to_sheet(row)

    def list(self, user_id: str) -> list[FactSheet]:
        rows = self.db.execute(
            f"SELECT * FROM fact_sheets WHERE user_id = $user {_NEWEST_FIRST}", {"user": user_id}
        ).fetchall()
        return [_row_to_sheet(row) for row in rows]
