"""The HTTP calls the harness makes, as one user: import, index status, search."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from evals.recall.mapping import Batch

SEARCH_LIMIT = 20  # the largest k; @5 and @10 are cut from it


@dataclass(frozen=True)
class Found:
    hits: list[dict]  # the answer's `results`, best first
    seconds: float
    degraded_reason: str | None

    @property
    def message_ids(self) -> list[str]:
        return [hit["message_id"] for hit in self.hits]


class RecallClient:
    def __init__(self, base_url: str, token: str, *, timeout: float = 300.0) -> None:
        self.http = httpx.Client(
            base_url=base_url, timeout=timeout, headers={"Authorization": f"Bearer {token}"}
        )

    def import_batch(self, batch: Batch) -> dict:
        response = self.http.post(
            "/api/conversations/import",
            content=batch.body,
            headers={"Content-Type": "application/json"},
        )
        check_status(response, 202)
        return response.json()

    def index_status(self) -> dict:
        response = self.http.get("/api/conversations/index-status")
        check_status(response, 200)
        return response.json()

    def wait_indexed(self, *, timeout: float, poll: float = 0.2) -> dict:
        """index-status once every message is indexed; TimeoutError past `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.index_status()
            if status["indexed"] >= status["messages"]:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"indexing not done in {timeout:g} s: {status}")
            time.sleep(poll)

    def search(self, query: str, mode: str, *, limit: int = SEARCH_LIMIT,
               asked_at: str | None = None) -> Found:
        """`asked_at`: the moment the question's dates are resolved against (None: now)."""
        params = {"q": query, "mode": mode, "limit": limit}
        if asked_at is not None:
            params["asked_at"] = asked_at
        started = time.perf_counter()
        response = self.http.get("/api/conversations/search", params=params)
        seconds = time.perf_counter() - started
        check_status(response, 200)
        body = response.json()
        return Found(body["results"], seconds, body.get("degraded_reason"))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RecallClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_status(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path}: "
            f"{response.status_code} {response.text[:500]}"
        )
