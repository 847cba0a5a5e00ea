"""A recording proxy on loopback in front of any OpenAI-compatible upstream.

The service under test talks to the proxy (its LLM_BASE_URL); the proxy forwards
every request unchanged (optionally capping `max_tokens`, or folding system
messages into the first user message for a model that has no system role), relays the answer as
it streams, and records the request body, the upstream's time to first content
token and the usage it reported. That is how the harness sees exactly what each
layout sends, whatever the upstream is (scripted, llama.cpp, a provider).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from chatsvc.llm import fold_system


@dataclass
class Exchange:
    body: dict
    status: int = 0
    ttft_seconds: float | None = None  # first content token, measured at the proxy
    total_seconds: float | None = None
    usage: dict | None = None


class RecordingProxy:
    def __init__(self, target_base_url: str, *, api_key: str | None = None,
                 max_tokens: int | None = None, timeout: float = 600.0,
                 port: int = 0, fold_system_messages: bool = False) -> None:
        self.target = target_base_url.rstrip("/")
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.port = port  # 0: any free port
        self.fold_system_messages = fold_system_messages
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def record(self, body: dict) -> Exchange:
        exchange = Exchange(body)
        with self._lock:
            self.exchanges.append(exchange)
        return exchange

    def start(self) -> RecordingProxy:
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _content_and_usage(line: bytes) -> tuple[bool, dict | None]:
    """(has content, usage) of one SSE `data:` line."""
    if not line.startswith(b"data:"):
        return False, None
    payload = line[5:].strip()
    if not payload or payload == b"[DONE]":
        return False, None
    try:
        chunk = json.loads(payload)
    except json.JSONDecodeError:
        return False, None
    choices = chunk.get("choices") or []
    content = any((c.get("delta") or {}).get("content") for c in choices)
    usage = chunk.get("usage") or next((c["usage"] for c in choices if c.get("usage")), None)
    return content, usage


class _Handler(BaseHTTPRequestHandler):
    proxy: RecordingProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return None

    def _target(self) -> str:
        path = self.path[3:] if self.path.startswith("/v1") else self.path
        return self.proxy.target + path

    def _headers(self) -> dict[str, str]:
        key = self.proxy.api_key or self.headers.get("authorization", "").removeprefix("Bearer ")
        return {"authorization": f"Bearer {key or 'unused'}"}

    def do_GET(self) -> None:
        answer = httpx.get(self._target(), headers=self._headers(), timeout=30)
        self._reply(answer.status_code, answer.headers.get("content-type", ""), answer.content)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        exchange = self.proxy.record(body)
        forwarded = dict(body)
        if self.proxy.fold_system_messages and body.get("messages"):
            forwarded["messages"] = fold_system(body["messages"])
        if self.proxy.max_tokens is not None:
            forwarded["max_tokens"] = min(body.get("max_tokens") or self.proxy.max_tokens,
                                          self.proxy.max_tokens)
        started = time.perf_counter()
        with httpx.Client(timeout=self.proxy.timeout) as client, client.stream(
            "POST", self._target(), json=forwarded, headers=self._headers()
        ) as answer:
            exchange.status = answer.status_code
            kind = answer.headers.get("content-type", "")
            if answer.status_code != 200 or "event-stream" not in kind:
                data = answer.read()
                exchange.total_seconds = time.perf_counter() - started
                if answer.status_code == 200:
                    exchange.usage = json.loads(data).get("usage")
                self._reply(answer.status_code, kind, data)
                return
            self._relay(answer, exchange, started)

    def _relay(self, answer: httpx.Response, exchange: Exchange, started: float) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        pending = b""
        for data in answer.iter_raw():
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                content, usage = _content_and_usage(line)
                if content and exchange.ttft_seconds is None:
                    exchange.ttft_seconds = time.perf_counter() - started
                exchange.usage = usage or exchange.usage
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        exchange.total_seconds = time.perf_counter() - started
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _reply(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind or "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
