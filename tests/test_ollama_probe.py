"""scripts/ollama_probe.py, serve.sh's question "is Ollama there?", run as serve.sh runs it:
the exit status answers, and nothing of chatsvc (nor httpx) is imported for it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from chatsvc.local_models import free_port
from chatsvc.testing import LoopbackHTTPServer

PROBE = Path(__file__).resolve().parent.parent / "scripts" / "ollama_probe.py"


def probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}
    return subprocess.run([sys.executable, "-X", "importtime", str(PROBE), *args], env=clean,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def ollama_like():
    """A server answering GET / like Ollama (200 "Ollama is running"), or with `status`."""

    class Handler(BaseHTTPRequestHandler):
        status = 200

        def do_GET(self) -> None:
            self.send_response(self.status)
            self.end_headers()
            self.wfile.write(b"Ollama is running")

        def log_message(self, *args) -> None:
            pass

    server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Handler, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_answering_ollama_exits_0_without_importing_chatsvc(ollama_like):
    _, url = ollama_like
    done = probe(url)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "urllib" in imported and not imported & {"chatsvc", "httpx", "store", "context"}


def test_the_url_comes_from_ollama_url(ollama_like):
    _, url = ollama_like
    assert probe(env={"OLLAMA_URL": url}).returncode == 0


def test_no_ollama_or_an_error_answer_exits_1(ollama_like):
    handler, url = ollama_like
    assert probe(f"http://127.0.0.1:{free_port()}").returncode == 1  # nothing listens
    handler.status = 500
    assert probe(url).returncode == 1
    assert probe("not a url").returncode == 1
