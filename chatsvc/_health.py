"""Dependency checks for `GET /health` and `chatsvc doctor`, cached for a few seconds."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import httpx

from chatsvc._settings import Settings
from chatsvc._threads import in_thread
from chatsvc.embeddings import Embedder
from chatsvc.local_models import models_dir
from chatsvc.local_watch import ModelStatus, read_status
from chatsvc.reindex import REINDEXABLE
from store import VectorUnavailable
from store.backend import Stores

if TYPE_CHECKING:  # chatsvc.warmup builds its report with this module's Check
    from chatsvc.warmup import Warmup

LLM_PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str
    fix: str = ""
    counts: dict[str, int] | None = None

    def as_json(self) -> dict:
        extra = {} if self.counts is None else {"counts": self.counts}
        return {"ok": self.ok, "detail": self.detail, **extra}


class HealthChecker:
    def __init__(self, settings: Settings, stores: Stores, embedder: Embedder,
                 warmup: Warmup) -> None:
        self.settings = settings
        self.warmup = warmup
        self.stores = stores
        self.db = stores.db
        self.embedder = embedder
        self._http = httpx.AsyncClient(timeout=LLM_PROBE_TIMEOUT)
        self._cached: tuple[float, dict[str, Check]] | None = None

    async def checks(self, *, fresh: bool = False) -> dict[str, Check]:
        max_age = self.settings.health_cache_seconds
        if not fresh and self._cached and time.monotonic() - self._cached[0] < max_age:
            return self._cached[1]
        # Aged from when the checks began: the LLM probe alone may take seconds.
        started = time.monotonic()
        embeddings = await self._embeddings()
        result = {
            "database": await self._database(),
            "vector_store": self._vector_store(),
            "embeddings": embeddings,
            "embeddings_waiting": await self._waiting(embeddings),
            "jobs": await self._jobs(),
            "llm": await self._llm(),
        }
        self._cached = (started, result)
        return result

    async def report(self, *, details: bool) -> dict:
        """The checks; their `detail` (hosts, URLs, models) only when `details`. The
        start-up warm-up's state is this process's own, never cached: `warm` says
        whether it has ended, its check whether a step of it failed."""
        checks = {**await self.checks(), "warm": self.warmup.check()}
        status = "ok" if all(c.ok for c in checks.values()) else "degraded"
        shown = {k: c.as_json() if details else {"ok": c.ok} for k, c in checks.items()}
        return {"status": status, "warm": self.warmup.warm, "checks": shown}

    async def _database(self) -> Check:
        try:
            return Check(True, await in_thread(self.db.describe))
        except Exception as exc:
            fix = f"check that {self.db.path} is reachable and writable"
            return Check(False, f"database error: {exc}", fix)

    def _vector_store(self) -> Check:
        state = self.db.vector_state
        fix = "" if state.ok else (
            "run `chatsvc reindex`" if state.conflict
            else "pip install sqlite-vec>=0.1.9 (or fix CHATSVC_SQLITE_VEC_PATH)"
        )
        return Check(state.ok, state.detail, fix)

    async def _embeddings(self) -> Check:
        ok, detail = await self.embedder.check()
        fix = "" if ok else _embeddings_fix(self.settings)
        return Check(ok, detail, fix)

    async def _waiting(self, embeddings: Check) -> Check:
        """Rows per index that wait for an embedding (the indexer fills them in): a
        failure only while the embedder is down, since then nothing fills them."""
        try:
            counts = await in_thread(
                lambda: {name: get(self.stores).pending_count()
                         for name, get in REINDEXABLE.items()})
        except VectorUnavailable:
            return Check(True, "not counted: the vector store is unavailable")
        waiting = {name: n for name, n in counts.items() if n}
        if not waiting:
            return Check(True, "nothing waits", counts=counts)
        detail = "waiting: " + ", ".join(f"{name} {n}" for name, n in waiting.items())
        if embeddings.ok:
            return Check(True, f"{detail} (being embedded)", counts=counts)
        return Check(False, f"{detail}; the embedding service is down", counts=counts,
                     fix="bring the embedding service back: the rows are embedded on their own")

    async def _jobs(self) -> Check:
        """The background job queue across every process on this database. A lapsed
        lease (its process died) is not a failure: the next indexer pass anywhere
        takes the job over."""
        try:
            depth = await in_thread(self.stores.jobs.depth)
        except Exception as exc:  # the database check says what is wrong
            return Check(True, f"not counted: {type(exc).__name__}")
        counts = asdict(depth)
        detail = ", ".join(f"{name} {n}" for name, n in counts.items())
        return Check(True, detail, counts=counts)

    async def _llm(self) -> Check:
        reached = await self._llm_reached()
        bundled = self._bundled_model()
        if bundled is None:
            return reached
        if reached.ok:  # up again after a crash: still named, with the log
            return Check(True, f"{reached.detail}, {bundled.summary()}")
        return Check(False, f"{reached.detail}; {bundled.summary()}", bundled.fix())

    async def _llm_reached(self) -> Check:
        base = self.settings.llm_base_url.rstrip("/")
        headers = {}
        if self.settings.llm_api_key:
            headers["Authorization"] = f"Bearer {self.settings.llm_api_key}"
        try:
            response = await self._http.get(f"{base}/models", headers=headers)
        except httpx.HTTPError as exc:
            return Check(False, f"{base} unreachable ({type(exc).__name__})",
                         "set LLM_BASE_URL to a reachable OpenAI-compatible server")
        if response.status_code in (401, 403):
            return Check(False, f"{base} rejected the API key ({response.status_code})",
                         "set LLM_API_KEY to a valid key")
        if response.status_code >= 400:
            return Check(False, f"{base}/models answered {response.status_code}",
                         "check LLM_BASE_URL points at the /v1 root")
        return Check(True, f"{self.settings.llm_model} at {base}")

    def _bundled_model(self) -> ModelStatus | None:
        """What `serve` on this data dir reports of the bundled model it runs as the
        LLM: its CPU path, crashes and restarts (None for any other upstream)."""
        settings = self.settings
        if not settings.llm_is_bundled:
            return None
        return read_status(models_dir(settings.data_dir), settings.llm_model,
                           settings.llm_base_url)

    async def aclose(self) -> None:
        await self._http.aclose()


def _embeddings_fix(settings: Settings) -> str:
    if settings.embeddings == "ollama":
        return (f"start Ollama at {settings.ollama_url} and `ollama pull {settings.embed_model}`"
                ", or set CHATSVC_EMBEDDINGS=local")
    if settings.embeddings == "openai":
        return "check CHATSVC_EMBED_URL serves /v1/embeddings"
    return "pip install 'chatsvc[local]'"
