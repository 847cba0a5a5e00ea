"""The threaded HTTP server behind the loopback test servers (scripted upstream, Ollama)."""

from __future__ import annotations

import socket
from http.server import ThreadingHTTPServer


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the default backlog of 5 drops connects under load tests

    def get_request(self) -> tuple[socket.socket, object]:
        # As the servers they stand for (Ollama's Go server, uvicorn) do. Without it a
        # response's head and body, sent apart, wait for the client's delayed ACK (up to
        # 40 ms) whenever the client is slow to read: evals/results/chat_bench_head_start.md.
        connection, address = super().get_request()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address
