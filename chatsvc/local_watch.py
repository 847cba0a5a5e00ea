"""What happened to the bundled model's process: crashes, restarts, its CPU path.

`ModelStatus` is written to <models dir>/<model>.state.json whenever it changes, and
removed when the server stops: `/health` (in any worker) and `chatsvc doctor` beside
the service read it from there to say "the bundled model crashed with signal 11 at
…; restarted 2 times; log: …" instead of only "unreachable".
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from chatsvc.local_cpu import CpuPath

# A process killed by one of these on the fast path is restarted on the safe one:
# what a CPU kernel that may not run here dies of (AMX without tile state: SIGSEGV).
FAULT_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT})
log = logging.getLogger("chatsvc.local")

KEPT_CRASHES = 5
LOG_TAIL_LINES = 20
RESTART_BACKOFF_SECONDS = 1.0
# A model that ran this long before it crashed gets its full count of restarts again.
STABLE_SECONDS = 600.0


def state_path(models_dir: Path, model_name: str) -> Path:
    return models_dir / f"{model_name}.state.json"


def exit_description(code: int) -> str:
    """Popen's return code in words: "signal 9 (SIGKILL)" or "exit code 1"."""
    if code < 0:
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def is_fault(code: int) -> bool:
    return code < 0 and -code in FAULT_SIGNALS


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 16 * 1024))
            return log.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


@dataclass
class ModelStatus:
    model: str
    base_url: str
    log: str  # the model server's own stdout and stderr
    cpu: str  # "fast" or "safe"
    cpu_reason: str
    max_restarts: int
    state: str = "starting"  # starting -> up -> restarting -> up ... | down (gave up)
    pid: int | None = None  # the model server's process while it is up
    restarts: int = 0
    crashes: list[dict] = field(default_factory=list)  # the latest KEPT_CRASHES

    def use(self, cpu: CpuPath) -> None:
        self.cpu, self.cpu_reason = cpu.name, cpu.reason

    def crashed(self, code: int) -> dict:
        crash = {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "exit": exit_description(code), "cpu": self.cpu,
                 "log_tail": log_tail(Path(self.log))}
        self.crashes = [*self.crashes, crash][-KEPT_CRASHES:]
        return crash

    def summary(self) -> str:
        """One line for /health and doctor."""
        text = f"bundled, CPU path {self.cpu} ({self.cpu_reason})"
        if not self.crashes:
            return text
        last = self.crashes[-1]
        times = "time" if self.restarts == 1 else "times"
        text += (f"; the bundled model crashed with {last['exit']} at {last['at']}; "
                 f"restarted {self.restarts} {times}")
        if self.state == "restarting":
            text += ", restarting now"
        elif self.state == "down":
            text += f", then given up ({len(self.crashes)} crashes in a row)"
        return f"{text}; log: {self.log}"

    def fix(self) -> str:
        """What to do while the model does not answer."""
        if self.state == "down":
            return (f"read {self.log}, then restart chatsvc (CHATSVC_LOCAL_LLM_CPU=safe if it "
                    "crashed on the fast path)")
        if self.state == "restarting":
            return "the service is restarting the bundled model: wait a few seconds"
        return f"the bundled model's process runs but does not answer: see {self.log}"

    def save(self, path: Path) -> None:
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(asdict(self), indent=1) + "\n")
        partial.replace(path)


def read_status(models_dir: Path, model_name: str, base_url: str) -> ModelStatus | None:
    """The status of the bundled model serving `base_url`, None when no server that
    chatsvc started there writes one (another upstream, or the service is not running)."""
    try:
        recorded = json.loads(state_path(models_dir, model_name).read_text())
    except (OSError, ValueError):
        return None
    if recorded.get("base_url") != base_url:
        return None
    try:
        return ModelStatus(**recorded)
    except TypeError:  # written by another version of chatsvc
        return None


class ModelExited(RuntimeError):
    """The model server's process ended while it was being brought up."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Supervisor:
    """Brings the bundled model's server up and keeps it up. A process that ends
    unasked is logged (how it died, its log's last lines) and restarted on the same
    port, so the LLM client reaches it where it did: at most `max_restarts` times in a
    row, waiting twice as long before each. One a fault killed on the fast CPU path
    comes back on the safe one; at start-up that is the only retry (the self-test's
    first completion is where AMX without tile state crashes)."""

    def __init__(self, server, max_restarts: int, *,
                 backoff_seconds: float = RESTART_BACKOFF_SECONDS) -> None:
        self.server = server  # a chatsvc.local_models.LlamaServer
        self.status = ModelStatus(model=server.model.name, base_url=server.base_url,
                                  log=str(server.log_path), cpu=server.cpu_path.name,
                                  cpu_reason=server.cpu_path.reason,
                                  max_restarts=max_restarts)
        self.path = state_path(server.cache_dir, server.model.name)
        self.backoff_seconds = backoff_seconds
        self.stopping = threading.Event()
        self._in_a_row = 0
        self._up_since = 0.0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Up (or an exception) before it returns; then watched in a thread."""
        self._bring_up(at_start=True)
        self._thread = threading.Thread(target=self._watch, name="bundled-llm-watch",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Call after `stopping` is set and the process was told to end."""
        if self._thread is not None:
            self._thread.join()
        # Unless another server of this model took the file over (one data dir, two
        # servers: a test, a benchmark).
        if read_status(self.path.parent, self.status.model, self.status.base_url):
            self.path.unlink(missing_ok=True)

    def _bring_up(self, *, at_start: bool) -> None:
        while True:
            self.status.use(self.server.cpu_path)
            self._save()
            try:
                self.server.launch()
            except ModelExited as exited:
                if self.stopping.is_set() or not self._may_restart(exited.code, at_start):
                    raise
                continue
            self._up_since = time.monotonic()
            self.status.state, self.status.pid = "up", self.server.pid
            self._save()
            return

    def _watch(self) -> None:
        while True:
            code = self.server.wait()
            if self.stopping.is_set():
                return
            if time.monotonic() - self._up_since >= STABLE_SECONDS:
                self._in_a_row = 0  # a crash after a long run starts a new count
            try:
                if self._may_restart(code, at_start=False):
                    self._bring_up(at_start=False)
                    continue
            except RuntimeError as exc:  # gave up, or it came up broken
                log.error("the bundled model is down: %s", exc)
                self.server.terminate()
            if not self.stopping.is_set():
                self.status.state = "down"
                self._save()
            return

    def _may_restart(self, code: int, at_start: bool) -> bool:
        """Record the crash; True once it is time to start the process again."""
        crash = self.status.crashed(code)
        self.status.pid = None
        log.error("the bundled model %s exited with %s on the %s CPU path; the last lines "
                  "of its log %s:\n%s", self.status.model, crash["exit"], crash["cpu"],
                  self.status.log, "\n".join(crash["log_tail"]))
        fault_on_fast = is_fault(code) and not self.server.cpu_path.safe
        if fault_on_fast:
            self.server.cpu_path = CpuPath(True, f"the fast path crashed with {crash['exit']}")
        self._in_a_row += 1
        allowed = fault_on_fast if at_start else self._in_a_row <= self.status.max_restarts
        if not allowed:
            self.status.state = "down"
            self._save()
            log.error("not restarting the bundled model (%d crashes in a row)", self._in_a_row)
            return False
        self.status.state = "restarting"
        self.status.restarts += 1
        self._save()
        delay = 0.0 if at_start else self.backoff_seconds * 2 ** (self._in_a_row - 1)
        log.warning("restarting the bundled model on the %s CPU path in %.0f s",
                    self.server.cpu_path.name, delay)
        return not self.stopping.wait(delay)

    def _save(self) -> None:
        self.status.save(self.path)
