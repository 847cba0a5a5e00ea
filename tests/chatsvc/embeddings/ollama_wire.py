"""Recorded Ollama responses (shapes and texts as Ollama sends them) behind an
httpx MockTransport, plus a log of what the client sent. The Ollama binary
cannot run here; everything else in these tests is the real client."""

from __future__ import annotations

import hashlib
import json
import struct

import httpx

MODEL = "nomic-embed-text:v1.5"
DIM = 768

# GET / on a running server.
ROOT_BODY = "Ollama is running"
# POST /api/embed on Ollama < 0.3.4 (gin's default 404, text/plain).
NO_ROUTE_BODY = "404 page not found"
# POST /api/embed for a model that was never pulled.
MODEL_MISSING = {"error": f'model "{MODEL}" not found, try pulling it first'}
# The runner dying on an over-long input.
RUNNER_DIED = {"error": "llama runner process has terminated: exit status 2"}
# GET /api/tags
TAGS = {"models": [{"name": MODEL, "model": MODEL, "modified_at": "2025-01-31T23:15:21Z",
                    "size": 274302450, "digest": "0a109f422b47",
                    "details": {"format": "gguf", "family": "nomic-bert",
                                "parameter_size": "137M", "quantization_level": "F16"}}]}


def vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic unit-ish vector per text, standing in for the model output."""
    seed = hashlib.sha256(text.encode()).digest()
    raw = [struct.unpack_from("b", seed, i % 32)[0] / 128 for i in range(dim)]
    norm = sum(x * x for x in raw) ** 0.5
    return [x / norm for x in raw]


def embed_body(inputs: list[str], dim: int = DIM) -> dict:
    return {"model": MODEL, "embeddings": [vector(t, dim) for t in inputs],
            "total_duration": 14143917, "load_duration": 1019500,
            "prompt_eval_count": sum(len(t.split()) for t in inputs)}


class FakeOllama:
    """Answers like Ollama. `script` holds per-request overrides for /api/embed:
    a callable(request) -> httpx.Response, or an exception to raise (EOF...)."""

    def __init__(self, *, legacy_only: bool = False, pulled: bool = True, dim: int = DIM):
        self.legacy_only = legacy_only
        self.pulled = pulled
        self.dim = dim
        self.script: list = []
        self.requests: list[tuple[str, str, dict | None]] = []

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def sent(self, path: str) -> list[dict]:
        return [body for _, p, body in self.requests if p == path]

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, body))
        path = request.url.path
        if request.method == "GET" and path == "/":
            return httpx.Response(200, text=ROOT_BODY)
        if request.method == "GET" and path == "/api/tags":
            return httpx.Response(200, json=TAGS if self.pulled else {"models": []})
        if path == "/api/embed":
            if self.script:
                step = self.script.pop(0)
                if isinstance(step, Exception):
                    raise step
                return step(request)
            if self.legacy_only:
                return httpx.Response(404, text=NO_ROUTE_BODY)
            if not self.pulled:
                return httpx.Response(404, json=MODEL_MISSING)
            return httpx.Response(200, json=embed_body(body["input"], self.dim))
        if path == "/api/embeddings":
            return httpx.Response(200, json={"embedding": vector(body["prompt"], self.dim)})
        return httpx.Response(404, text=NO_ROUTE_BODY)
