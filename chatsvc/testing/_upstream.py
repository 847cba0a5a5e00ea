"""A scripted OpenAI-compatible server on loopback, for tests and evals.

A real HTTP server (openai>=3 talks through httpx2, which transport mocks do not
intercept). It answers `POST /v1/chat/completions` (streaming or not) with the
next scripted `Reply`, records every request body, and reports
`usage.prompt_tokens_details.cached_tokens` as the longest common token prefix
with the previous request, the way a provider's prefix cache would.

    with ScriptedUpstream() as upstream:
        upstream.script(Reply(chunks=["Hel", "lo"]), Reply(status=500))
        ... point LLM_BASE_URL at upstream.base_url ...
        upstream.requests[0].body["messages"]

`default` answers every request left when the script runs out: a `Reply`, or a
function of the request body that returns one (an answer built from the prompt).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from chatsvc.testing._loopback import LoopbackHTTPServer
from context.tokens import common_prefix, encode

MODEL = "scripted-model"


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model makes: `arguments` is sent verbatim (it need
    not be valid JSON), in `argument_chunks` fragments of about equal size."""

    name: str
    arguments: str
    id: str = ""  # "" -> call_<index>
    argument_chunks: int = 2

    def fragments(self) -> list[str]:
        size = max(1, -(-len(self.arguments) // self.argument_chunks))
        return [self.arguments[i:i + size] for i in range(0, len(self.arguments), size)]

    def wire(self, index: int) -> dict:
        """As a non-streamed message (and an assembled stream) carries it."""
        return {"id": self.id or f"call_{index}", "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Reply:
    """What the upstream does for one request.

    status != 200 answers with an OpenAI-shaped error before any chunk.
    cut_after=N closes the connection after N content chunks (no terminator).
    hang=True accepts the request and never answers (until the server stops).
    chunk_delay sleeps before every chunk (slow tokens); first_chunk_delay before the
    first one as well (a long prefill).
    stall_after=N sends N content chunks, then nothing, the connection open, until the
    client closes it (counted in `closed_early`) or the server stops.
    stamp=True appends "@<time.monotonic()>;" to every chunk as it is sent, so a
    load benchmark on the same machine can measure each token's delivery latency.
    report_usage=False sends no usage, streaming or not (like llama-cpp-python's
    server when streaming).

    Broken upstreams: finish_reason=None sends no finish reason, send_done=False no
    `[DONE]` (the body still ends cleanly); error_event sends an error event after the
    chunks instead of the finish; one_write sends the whole stream in one write (so it
    arrives in one read); body answers 200 with that text and content_type instead of
    a stream (an HTML page, a non-streamed completion, hand-written events).

    Tool calls: tool_calls=[ToolCall(...)] streams them after the content chunks the
    way OpenAI does (per call a first delta with index, id, type and name and empty
    arguments, then the arguments in `argument_chunks` fragments of index only) and
    finishes with "tool_calls"; a non-streamed reply carries them in its message.
    """

    chunks: list[str] = field(default_factory=lambda: ["ok"])
    status: int = 200
    error_message: str = "scripted failure"
    chunk_delay: float = 0.0
    first_chunk_delay: float = 0.0
    cut_after: int | None = None
    stall_after: int | None = None
    hang: bool = False
    finish_reason: str | None = "stop"
    report_cached_tokens: bool = True
    report_usage: bool = True
    stamp: bool = False
    send_done: bool = True
    error_event: str | None = None
    one_write: bool = False
    body: str | None = None
    content_type: str = "text/html"
    tool_calls: list[ToolCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.tool_calls and self.finish_reason == "stop":
            self.finish_reason = "tool_calls"

    @property
    def content(self) -> str:
        return "".join(self.chunks)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict
    received_at: float


def prompt_tokens(messages: list[dict]) -> list[int]:
    """A stable token sequence for a message list (role markers + content, and the tool
    calls and call ids as sent, so a replayed tool exchange must match byte for byte)."""
    return encode("".join(_message_text(m) for m in messages))


def _message_text(message: dict) -> str:
    calls = message.get("tool_calls")
    return (f"<|{message.get('role')}|>{_content_text(message.get('content'))}"
            f"{json.dumps(calls) if calls else ''}{message.get('tool_call_id') or ''}")


def _content_text(content) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""



class ScriptedUpstream:
    def __init__(self, *, default: Reply | Callable[[dict], Reply] | None = None) -> None:
        self.default = default or Reply()
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._previous_tokens: list[int] = []
        self._stop = threading.Event()
        self.closed_early = 0  # streams whose client went away before the end
        self._server: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self, body: dict) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.default(body) if callable(self.default) else self.default

    def record(self, path: str, headers: dict[str, str], body: dict) -> tuple[int, int]:
        """Store the request; return (prompt_tokens, cached_tokens) for it."""
        tokens = prompt_tokens(body.get("messages") or [])
        with self._lock:
            self.requests.append(RecordedRequest(path, headers, body, time.monotonic()))
            cached = common_prefix(self._previous_tokens, tokens)
            self._previous_tokens = tokens
        return len(tokens), cached

    def start(self) -> ScriptedUpstream:
        handler = type("Handler", (_Handler,), {"upstream": self})
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), handler)
        # A short poll interval: stop() waits for the loop to notice (default 0.5 s).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedUpstream:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    upstream: ScriptedUpstream
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep test output quiet
        return None

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            models = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            self._json(200, models)
        else:
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "invalid JSON", "type": "invalid_request"}})
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        prompt, cached = self.upstream.record(self.path, headers, body)
        reply = self.upstream.next_reply(body)
        if reply.hang:
            self.upstream._stop.wait()
            return
        if reply.status != 200:
            error = {"message": reply.error_message, "type": "scripted", "code": reply.status}
            self._json(reply.status, {"error": error})
            return
        if reply.body is not None:
            self._send(200, reply.body.encode(), reply.content_type)
            return
        usage = _usage(prompt, len(encode(reply.content)), cached, reply.report_cached_tokens)
        if not reply.report_usage:
            usage = None
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(reply, usage if include_usage else None)
        else:
            self._json(200, _completion(reply, usage))

    def _json(self, status: int, payload: dict) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: Reply, usage: dict | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        try:
            self._send_chunks(reply, usage)
        except (BrokenPipeError, ConnectionResetError):
            self.upstream.closed_early += 1

    def _send_chunks(self, reply: Reply, usage: dict | None) -> None:
        held: list[bytes] = []  # one_write: everything goes out at the end, together
        send = held.append if reply.one_write else self._write
        send(_event(_chunk({"role": "assistant", "content": ""}, None)))
        for index, piece in enumerate(reply.chunks):
            if reply.cut_after is not None and index >= reply.cut_after:
                self.close_connection = True
                self.connection.shutdown(2)  # cut: no terminating chunk
                return
            if reply.stall_after is not None and index >= reply.stall_after:
                self._silent_until_closed()
                return
            if delay := reply.chunk_delay + (reply.first_chunk_delay if index == 0 else 0.0):
                time.sleep(delay)
            if reply.stamp:
                piece = f"{piece}@{time.monotonic():.6f};"
            send(_event(_chunk({"content": piece}, None)))
        for index, call in enumerate(reply.tool_calls):
            for delta in _tool_call_deltas(index, call):
                send(_event(_chunk({"tool_calls": [delta]}, None)))
        if reply.error_event is not None:
            send(_event({"error": {"message": reply.error_event, "type": "scripted"}}))
        elif reply.finish_reason is not None:
            send(_event(_chunk({}, reply.finish_reason)))
        if usage is not None and reply.error_event is None:
            send(_event({**_chunk({}, None), "choices": [], "usage": usage}))
        if reply.send_done:
            send(b"data: [DONE]\n\n")
        if held:
            self._write(b"".join(held))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _silent_until_closed(self) -> None:
        while not self.upstream._stop.wait(0.02):
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                self.upstream.closed_early += 1
                return

    def _write(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _usage(prompt: int, completion: int, cached: int, report_cached: bool) -> dict:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "total_tokens": prompt + completion}
    if report_cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def _chunk(delta: dict, finish_reason: str | None) -> dict:
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _tool_call_deltas(index: int, call: ToolCall) -> list[dict]:
    head = call.wire(index)
    first = {"index": index, **head, "function": {"name": call.name, "arguments": ""}}
    return [first, *({"index": index, "function": {"arguments": piece}}
                     for piece in call.fragments())]


def _completion(reply: Reply, usage: dict | None) -> dict:
    message = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:  # OpenAI's content is null beside tool calls when nothing was said
        message = {"role": "assistant", "content": reply.content or None,
                   "tool_calls": [call.wire(i) for i, call in enumerate(reply.tool_calls)]}
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": usage,
    }
