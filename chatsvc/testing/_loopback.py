"""The threaded HTTP server behind the loopback test servers (scripted upstream, Ollama)."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the default backlog of 5 drops connects under load tests
