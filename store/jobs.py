"""Background jobs: one row per piece of queued work, with its progress.

A job is created `queued`, taken by the indexer (`start`: `running`), moves its
`done` counter (`progress`) and ends `done` or `error` (`finish`). A job whose
work cannot run for now (the embedder is down) goes back to `queued` with the
reason in `error` (`defer`). A `running` job nobody works on (its process died)
is still in `unfinished`, so the next indexer pass resumes it. Reads by users
are owner-scoped: another user's job is NotFound.
"""

from __future__ import annotations

from dataclasses import dataclass

from store._errors import NotFound
from store.clock import new_id, now_iso
from store.contract import Database

QUEUED, RUNNING, DONE, ERROR = "queued", "running", "done", "error"
_COLUMNS = "id, user_id, kind, status, done, total, entry_id, error, created_at, updated_at"


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


class Jobs:
    def __init__(self, db: Database) -> None:
        self.db = db

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

    def unfinished(self, *, limit: int = 100) -> list[Job]:
        """Queued and running jobs, oldest first (the indexer's queue)."""
        return self.db.fetch(
            f"SELECT {_COLUMNS} FROM jobs WHERE status IN ('queued', 'running') "
            "ORDER BY created_at, id LIMIT $limit", {"limit": limit}, Job)

    def start(self, job_id: str, *, total: int) -> Job:
        return self._set(job_id, status=RUNNING, total=total, error=None)

    def progress(self, job_id: str, done: int, *, total: int | None = None) -> None:
        self._set(job_id, done=done, total=total)

    def finish(self, job_id: str, *, error: str | None = None) -> Job:
        """`done` (all units counted done) or, with `error`, `error`; the payload goes."""
        with self.db.transaction():
            self.db.execute("DELETE FROM job_payloads WHERE job_id = $id", {"id": job_id})
        if error is not None:
            return self._set(job_id, status=ERROR, error=error)
        job = self._read(job_id)
        return self._set(job_id, status=DONE, done=job.total, error=None)

    def defer(self, job_id: str, reason: str) -> Job:
        """Back to the queue, saying why it waits; its progress is kept."""
        return self._set(job_id, status=QUEUED, error=reason)

    def prune(self, *, finished_before: str) -> int:
        """Delete jobs that ended (`done`, `error`) before that time; how many went."""
        with self.db.transaction():
            return self.db.execute(
                "DELETE FROM jobs WHERE status IN ('done', 'error') AND updated_at < $before",
                {"before": finished_before}).rowcount

    # -- internals ---------------------------------------------------------------------

    _UNSET = object()

    def _set(self, job_id: str, *, status: str | None = None, done: int | None = None,
             total: int | None = None, error: object = _UNSET) -> Job:
        changes = {"status": status, "done": done, "total": total}
        changes = {name: value for name, value in changes.items() if value is not None}
        if error is not Jobs._UNSET:
            changes["error"] = error
        columns = ", ".join(f"{name} = ${name}" for name in changes)
        with self.db.transaction():
            self.db.execute(f"UPDATE jobs SET {columns}, updated_at = $now WHERE id = $id",
                            {**changes, "now": now_iso(), "id": job_id})
        return self._read(job_id)

    def _find(self, job_id: str) -> Job | None:
        rows = self.db.fetch(f"SELECT {_COLUMNS} FROM jobs WHERE id = $id", {"id": job_id},
                             Job)
        return rows[0] if rows else None

    def _read(self, job_id: str) -> Job:
        job = self._find(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job
