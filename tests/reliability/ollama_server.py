"""A misbehaving Ollama on a real loopback port, answering in Ollama's wire format.

The Ollama binary cannot run here; this server replays its recorded responses
(tests/chatsvc/embeddings/ollama_wire.py) and can be switched, between requests,
to each way a real Ollama fails: slow, HTTP 500 (runner died), EOF in the middle
of the body, garbage JSON, vectors of the wrong dimension, or not listening at all.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

from chatsvc.testing import LoopbackHTTPServer
from tests.chatsvc.embeddings.ollama_wire import (
    NO_ROUTE_BODY,
    ROOT_BODY,
    RUNNER_DIED,
    TAGS,
    embed_body,
)

MODES = ("ok", "slow", "error_500", "eof", "garbage", "wrong_dim")
QUERY_PREFIX = "search_query: "  # nomic's, which the client adds to a query


class OllamaServer:
    def __init__(self, *, dim: int = 768, slow_seconds: float = 2.0) -> None:
        self.dim = dim
        self.slow_seconds = slow_seconds
        self.mode = "ok"
        self.embed_calls = 0
        self.inputs: list[list[str]] = []  # each /api/embed request's texts, in order
        self.port = 0
        self._server: LoopbackHTTPServer | None = None
        self._connections: set = set()

    @property
    def queries(self) -> int:
        """Query embeddings asked for so far (the background indexer's are documents)."""
        return sum(text.startswith(QUERY_PREFIX) for texts in self.inputs for text in texts)

    def asked(self, query: str) -> int:
        """Requests that embedded `query` alone, as a search query (a chat turn's)."""
        return self.inputs.count([f"{QUERY_PREFIX}{query}"])

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> OllamaServer:
        handler = type("Handler", (_Handler,), {"ollama": self})
        self._server = LoopbackHTTPServer(("127.0.0.1", self.port), handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening and drop kept-alive connections: Ollama is down."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for connection in list(self._connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    ollama: OllamaServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return None

    def setup(self) -> None:
        super().setup()
        self.ollama._connections.add(self.connection)

    def finish(self) -> None:
        self.ollama._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        if self.path == "/":
            self._send(200, ROOT_BODY.encode(), "text/plain; charset=utf-8")
        elif self.path == "/api/tags":
            self._send(200, json.dumps(TAGS).encode())
        else:
            self._send(404, NO_ROUTE_BODY.encode(), "text/plain")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if self.path != "/api/embed":
            self._send(404, NO_ROUTE_BODY.encode(), "text/plain")
            return
        self.ollama.embed_calls += 1
        texts = body["input"]
        self.ollama.inputs.append(texts if isinstance(texts, list) else [texts])
        mode = self.ollama.mode
        dim = self.ollama.dim // 2 if mode == "wrong_dim" else self.ollama.dim
        payload = json.dumps(embed_body(body["input"], dim)).encode()
        if mode == "slow":
            time.sleep(self.ollama.slow_seconds)
        if mode == "error_500":
            self._send(500, json.dumps(RUNNER_DIED).encode())
        elif mode == "eof":
            # Promise the whole body, send a third of it, hang up.
            self._head(200, "application/json", len(payload))
            self.wfile.write(payload[: len(payload) // 3])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
        elif mode == "garbage":
            self._send(200, payload[: len(payload) // 2] + b"\x00<html>oops")
        else:
            self._send(200, payload)

    def _head(self, status: int, content_type: str, length: int) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(length))
        self.end_headers()

    def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        try:
            self._head(status, content_type, len(data))
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (a `slow` answer past its timeout): as Ollama does
