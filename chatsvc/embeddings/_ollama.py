"""Ollama's native API: batched `POST /api/embed`, legacy `POST /api/embeddings`.

`/api/embed` (Ollama >= 0.3.4) takes `input` as a list and returns `embeddings`,
one per input. Older servers answer it with a plain-text "404 page not found";
the client then switches to `/api/embeddings` (`prompt` -> `embedding`, one text
per request) for good. A 404 with Ollama's JSON error is something else (model
not pulled) and is reported, not worked around.
"""

from __future__ import annotations

import logging

import httpx

from chatsvc.embeddings._http import PROBE_TIMEOUT, HttpEmbedder, json_field

log = logging.getLogger("chatsvc.embeddings")


class OllamaEmbedder(HttpEmbedder):
    service = "Ollama"

    def __init__(self, base_url: str, **options) -> None:
        super().__init__(base_url, **options)
        self.legacy = False

    async def _send(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        if not self.legacy:
            response = await self._http.post(
                "/api/embed", json={"model": self.model, "input": texts, "truncate": True}
            )
            if not _is_missing_route(response):
                self._raise_for_status(response)
                return json_field(response, "embeddings")
            log.warning("Ollama at %s has no /api/embed (older than 0.3.4): "
                        "using the legacy /api/embeddings", self.base_url)
            self.legacy = True
        return [await self._legacy_one(text) for text in texts]

    async def _legacy_one(self, text: str) -> list[float]:
        response = await self._http.post(
            "/api/embeddings", json={"model": self.model, "prompt": text}
        )
        self._raise_for_status(response)
        return json_field(response, "embedding")

    async def _describe(self) -> tuple[bool, str]:
        root = await self._http.get("/", timeout=PROBE_TIMEOUT)
        if root.status_code != 200:
            return False, f"Ollama at {self.base_url} answered GET / with {root.status_code}"
        tags = await self._http.get("/api/tags", timeout=PROBE_TIMEOUT)
        if tags.status_code == 200:
            names = {m.get("name") for m in json_field(tags, "models")}
            if not names & {self.model, f"{self.model}:latest"}:
                return False, (f"Ollama at {self.base_url} has no model {self.model}: "
                               f"run `ollama pull {self.model}`")
        return True, f"Ollama at {self.base_url}, {self.model} ({self.dim}-d)"


def _is_missing_route(response: httpx.Response) -> bool:
    if response.status_code != 404:
        return False
    try:
        return "error" not in response.json()
    except ValueError:
        return True
