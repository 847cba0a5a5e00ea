"""Background jobs: one row per piece of queued work, with its progress.

A job is created `queued`, claimed by one process's indexer (`claim`: a lease,
`owner` until `lease_until`, renewed while it works), taken (`start`: `running`),
moves its `done` counter (`progress`) and ends `done` or `error` (`finish`). A job
whose work cannot run for now (the embedder is down) goes back to `queued` with
the reason in `error` and no lease (`defer`). A job whose lease ran out (its
process died or hangs) is claimed again by any worker or replica, which resumes
from its `done`. Writes through `bound(owner)` only touch a job that owner still
holds (else LeaseLost), so a process that lost its lease cannot undo the taker's
work. Reads by users are scoped to the user: another user's job is NotFound.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from store._errors import NotFound, StoreError
from store.clock import iso, new_id, now_iso, utc_now
from store.contract import Database
from store.sql import POSTGRESQL

QUEUED, RUNNING, DONE, ERROR = "queued", "running", "done", "error"
_COLUMNS = ("id, user_id, kind, status, done, total, entry_id, error, created_at, updated_at, "
            "owner, lease_until")
_OPEN = "status IN ('queued', 'running')"
_CLAIMABLE = f"{_OPEN} AND (owner IS NULL OR lease_until < $now)"


class LeaseLost(StoreError):
    """The job's lease ran out and another process holds it now: stop working on it."""


@dataclass(frozen=True)
class Payload:
    """An upload job's input: the file as received and the request's options (JSON)."""

    filename: str
    content_type: str
    data: bytes
    options: str = "{}"


@dataclass(frozen=True)
class Job:
    id: str
    user_id: str
    kind: str
    status: str
    done: int
    total: int
    entry_id: str | None
    error: str | None
    created_at: str
    updated_at: str
    owner: str | None = None  # the process holding its lease, if one ever did
    lease_until: str | None = None


@dataclass(frozen=True)
class QueueDepth:
    """Unfinished jobs: waiting for a claim, leased, and leased by a lapsed lease
    (its process died or hangs: the next indexer pass anywhere takes it over)."""

    queued: int
    running: int
    expired: int


class Jobs:
    def __init__(self, db: Database, *, owner: str | None = None) -> None:
        self.db = db
        self.owner = owner  # set (`bound`): every write requires this owner's lease

    def bound(self, owner: str) -> Jobs:
        """These jobs as written by the process `owner`: LeaseLost once it lost one."""
        return Jobs(self.db, owner=owner)

    def create(self, user_id: str, *, kind: str, entry_id: str | None = None,
               total: int = 0, payload: Payload | None = None) -> Job:
        """A queued job; its `payload` is stored with it (one transaction: an indexer
        never sees the job without it), where every worker's indexer reads it."""
        job_id, now = new_id(), now_iso()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO jobs(id, user_id, kind, status, done, total, entry_id, "
                "created_at, updated_at) VALUES ($id, $user, $kind, 'queued', 0, $total, "
                "$entry, $now, $now)",
                {"id": job_id, "user": user_id, "kind": kind, "total": total,
                 "entry": entry_id, "now": now})
            if payload is not None:
                self._put_payload(job_id, payload)
        return self._read(job_id)

    def _put_payload(self, job_id: str, payload: Payload) -> None:
        self.db.execute(
            "INSERT INTO job_payloads(job_id, filename, content_type, data, options) "
            "VALUES ($id, $name, $type, $data, $options)",
            {"id": job_id, "name": payload.filename, "type": payload.content_type,
             "data": payload.data, "options": payload.options})

    def payload(self, job_id: str) -> Payload | None:
        """The job's input; None once the job ended (or it never had one)."""
        rows = self.db.fetch(
            "SELECT filename, content_type, data, options FROM job_payloads "
            "WHERE job_id = $id", {"id": job_id},
            lambda name, kind, data, options: Payload(name, kind, bytes(data), options))
        return rows[0] if rows else None

    def get(self, user_id: str, job_id: str) -> Job:
        """The user's job; NotFound for a missing or another user's one."""
        job = self._find(job_id)
        if job is None or job.user_id != user_id:
            raise NotFound(f"no job {job_id}")
        return job

    def recent(self, user_id: str, *, limit: int) -> list[Job]:
        """The user's jobs, newest first (a client's view of what is being indexed)."""
        return self.db.fetch(
            f"SELECT {_COLUMNS} FROM jobs WHERE user_id = $user "
            "ORDER BY created_at DESC, id DESC LIMIT $limit", {"user": user_id, "limit": limit},
            Job)

    # -- leases ------------------------------------------------------------------------

    def claim(self, owner: str, *, lease_seconds: float) -> Job | None:
        """The oldest unfinished job nobody holds a live lease on, now leased to
        `owner`; None when there is none. At most one process gets each job: SQLite's
        write transaction excludes other writers, PostgreSQL's row lock (SKIP LOCKED:
        another replica's claim in flight is passed over, not waited for) and the
        UPDATE's own re-check of the lease do the same across replicas."""
        now = now_iso()
        skip = " FOR UPDATE SKIP LOCKED" if self.db.dialect == POSTGRESQL else ""
        with self.db.transaction():
            rows = self.db.fetch(
                f"SELECT id FROM jobs WHERE {_CLAIMABLE} ORDER BY created_at, id "
                f"LIMIT 1{skip}", {"now": now}, lambda job_id: job_id)
            if not rows or not self.db.execute(
                f"UPDATE jobs SET owner = $owner, lease_until = $until WHERE id = $id "
                f"AND {_CLAIMABLE}",
                {"owner": owner, "until": _until(lease_seconds), "id": rows[0],
                 "now": now}).rowcount:
                return None
        return self._read(rows[0])

    def renew(self, job_id: str, owner: str, *, lease_seconds: float) -> bool:
        """Extend `owner`'s lease on the job; False when it holds it no longer."""
        with self.db.transaction():
            return bool(self.db.execute(
                f"UPDATE jobs SET lease_until = $until WHERE id = $id AND owner = $owner "
                f"AND {_OPEN}",
                {"until": _until(lease_seconds), "id": job_id, "owner": owner}).rowcount)

    def depth(self) -> QueueDepth:
        """How many unfinished jobs wait, run and have a lapsed lease (`/health`)."""
        rows = self.db.fetch(
            "SELECT COUNT(*) FILTER (WHERE owner IS NULL), "
            "COUNT(*) FILTER (WHERE lease_until >= $now), "
            "COUNT(*) FILTER (WHERE owner IS NOT NULL AND lease_until < $now) "
            f"FROM jobs WHERE {_OPEN}", {"now": now_iso()}, QueueDepth)
        return rows[0]

    def start(self, job_id: str, *, total: int) -> Job:
        self._set(job_id, status=RUNNING, total=total, error=None)
        return self._read(job_id)

    def progress(self, job_id: str, done: int, *, total: int | None = None) -> None:
        self._set(job_id, done=done, total=total)

    def finish(self, job_id: str, *, error: str | None = None) -> Job:
        """`done` (all units counted done) or, with `error`, `error`; the payload and
        the lease go."""
        with self.db.transaction():
            if error is not None:
                self._set(job_id, status=ERROR, error=error, lease_until=None)
            else:
                self._set(job_id, status=DONE, done=self._read(job_id).total, error=None,
                          lease_until=None)
            self.db.execute("DELETE FROM job_payloads WHERE job_id = $id", {"id": job_id})
        return self._read(job_id)

    def defer(self, job_id: str, reason: str) -> Job:
        """Back to the queue, saying why it waits, free for any process to claim; its
        progress is kept."""
        self._set(job_id, status=QUEUED, error=reason, lease_until=None, release=True)
        return self._read(job_id)

    def prune(self, *, finished_before: str) -> int:
        """Delete jobs that ended (`done`, `error`) before that time; how many went."""
        with self.db.transaction():
            return self.db.execute(
                "DELETE FROM jobs WHERE status IN ('done', 'error') AND updated_at < $before",
                {"before": finished_before}).rowcount

    # -- internals ---------------------------------------------------------------------

    _UNSET = object()

    def _set(self, job_id: str, *, status: str | None = None, done: int | None = None,
             total: int | None = None, error: object = _UNSET,
             lease_until: object = _UNSET, release: bool = False) -> None:
        """Change the job's columns; when bound, only while this owner holds it."""
        changes = {"status": status, "done": done, "total": total}
        changes = {name: value for name, value in changes.items() if value is not None}
        for name, value in (("error", error), ("lease_until", lease_until)):
            if value is not Jobs._UNSET:
                changes[name] = value
        if release:
            changes["owner"] = None
        columns = ", ".join(f"{name} = ${name}" for name in changes)
        held = "" if self.owner is None else " AND owner = $holder"
        with self.db.transaction():
            changed = self.db.execute(
                f"UPDATE jobs SET {columns}, updated_at = $now WHERE id = $id{held}",
                {**changes, "now": now_iso(), "id": job_id, "holder": self.owner}).rowcount
        if not changed and self.owner is not None:
            raise LeaseLost(f"job {job_id} is no longer leased to {self.owner}")

    def _find(self, job_id: str) -> Job | None:
        rows = self.db.fetch(f"SELECT {_COLUMNS} FROM jobs WHERE id = $id", {"id": job_id},
                             Job)
        return rows[0] if rows else None

    def _read(self, job_id: str) -> Job:
        job = self._find(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job


def _until(lease_seconds: float) -> str:
    return iso(utc_now() + timedelta(seconds=lease_seconds))
