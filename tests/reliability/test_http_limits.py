"""Issue 18.10 against a real `chatsvc serve` over raw sockets: an unauthenticated client
cannot grow the server's memory with a huge header, nor hold connections open with a
half-sent request (CHATSVC_MAX_HEADER_BYTES, CHATSVC_HEADER_TIMEOUT)."""

from __future__ import annotations

import socket
import time

import pytest

from chatsvc.testing import ServiceProcess

TIMEOUT = 1.0
HEADER_LINE_BYTES = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def child(tmp_path_factory, ollama, scripted):
    service = ServiceProcess(tmp_path_factory.mktemp("limits") / "data", {
        "CHATSVC_EMBEDDINGS": "ollama", "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        "CHATSVC_MAX_HEADER_BYTES": "16384", "CHATSVC_HEADER_TIMEOUT": str(TIMEOUT),
    })
    with service:
        yield service


def _connect(service: ServiceProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", service.port), timeout=10)


def _answer(sock: socket.socket) -> bytes:
    """What the server sent before closing (b"" if it just closed)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return received


def test_a_huge_header_line_is_refused_without_buffering_it(child):
    before = child.memory_kib()["anon"]
    answers = []
    for _ in range(2):
        with _connect(child) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
            chunk, sent = b"a" * 65536, 0
            try:
                while sent < HEADER_LINE_BYTES:
                    sock.sendall(chunk)
                    sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            answers.append(_answer(sock))
    grown_mib = (child.memory_kib()["anon"] - before) / 1024
    assert grown_mib < 16, f"the server grew by {grown_mib:.0f} MiB"
    for answer in answers:
        assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert child.crashes() == []


def test_a_header_under_the_limit_is_served(child):
    with _connect(child) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 8000
                     + b"\r\nConnection: close\r\n\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 200")


def test_a_body_arriving_with_its_head_does_not_count_as_head(child):
    # A 100 kB body in the same write as a small head: the server's first read holds
    # both, and only the head counts against the 16 kB limit.
    body = b'{"message": "' + b"a" * 100_000 + b'"}'
    with _connect(child) as sock:
        sock.sendall(b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        assert _answer(sock).startswith(b"HTTP/1.1 401")  # past the guard, to auth


@pytest.mark.parametrize("sent", [
    b"",  # connected, nothing sent
    b"GET /health HTTP/1.1\r\nHost: x\r\n",  # a head never finished
    b"POST /api/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mess",  # a body
])
def test_a_half_sent_request_is_closed_after_the_timeout(child, sent):
    token = child.add_user(f"user{time.monotonic_ns()}")
    started = time.monotonic()
    with _connect(child) as sock:
        sock.sendall(sent.replace(b"{token}", token.encode()))
        answer = _answer(sock)
    waited = time.monotonic() - started
    assert waited < TIMEOUT + 3, f"still open after {waited:.1f} s"
    assert answer == b"", answer[:200]
    assert child.crashes() == []


def test_a_slow_head_is_closed_even_if_bytes_keep_trickling(child):
    started = time.monotonic()
    with _connect(child) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        try:
            for _ in range(int(TIMEOUT * 10)):
                time.sleep(0.25)
                sock.sendall(b"X-Slow: 1\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert _answer(sock) == b""
    assert time.monotonic() - started < TIMEOUT + 3
