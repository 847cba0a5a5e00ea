"""`chatsvc serve` as a real child process, for fault tests and load benchmarks.

The child gets a clean environment (nothing from the developer's shell but
MACHINE_VARS), logs to a file the caller can scan for tracebacks, and is stopped with
SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from chatsvc._settings import Settings
from chatsvc.local_models import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
# What an unhandled exception leaves in the log: Python's traceback header, or
# uvicorn's / Litestar's own words for an error that escaped the app.
# Settings of the machine rather than of a test, passed on to the child: a host whose
# fast CPU path crashes the bundled model runs every test with CHATSVC_LOCAL_LLM_CPU=safe.
MACHINE_VARS = ("CHATSVC_LOCAL_LLM_CPU",)


def machine_env() -> dict[str, str]:
    """MACHINE_VARS as this process has them."""
    return {var: os.environ[var] for var in MACHINE_VARS if var in os.environ}


def bundled_llm_cpu() -> str:
    """CHATSVC_LOCAL_LLM_CPU here (validated), for a test's own LlamaServer."""
    return Settings.from_env(machine_env()).local_llm_cpu


_CRASH = re.compile(r"Traceback \(most recent call last\)|Exception in ASGI application"
                    r"|unhandled error on")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServiceProcess:
    """`root`: the checkout whose chatsvc runs (another one's: a before/after benchmark)."""

    def __init__(self, data_dir: Path, env: dict[str, str], *, log_path: Path | None = None,
                 root: Path = REPO_ROOT):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.root = root
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": str(root),
            "CHATSVC_LOCAL_MODELS": "off",
            "CHATSVC_DATA_DIR": str(self.data_dir),
            "CHATSVC_PORT": str(self.port),
            **machine_env(),
            **env,
        }
        self.log_path = log_path or self.data_dir.parent / f"server-{self.port}.log"
        self.settings = Settings.from_env(self.env)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @contextmanager
    def database(self) -> Iterator:
        """The service's database (its SQLite file, or CHATSVC_DATABASE_URL's), opened
        here: beside the service, or after it."""
        from store.backend import open_database

        db = open_database(database_url=self.settings.database_url,
                           sqlite_path=self.settings.database_path,
                           embed_model=self.settings.embed_model,
                           embed_dim=self.settings.embed_dim,
                           sqlite_vec_path=self.settings.sqlite_vec_path)
        try:
            yield db
        finally:
            db.close()

    def add_user(self, name: str, *, admin: bool = False) -> str:
        """A user created in the service's database; returns its token."""
        from store import Users

        with self.database() as db:
            return Users(db).add(name, admin=admin)[1]

    def start(self, *, timeout: float = 90.0, warm: bool = True) -> ServiceProcess:
        """Start it and return once `/health` answers and, with `warm`, says the start-up
        warm-up has ended (so that it sends nothing to the test's servers later)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chatsvc", "serve"], cwd=self.root, env=self.env,
            stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chatsvc serve exited: {self.log()[-2000:]}")
            if (health := self.health()) is not None and (health["warm"] or not warm):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chatsvc serve not ready in {timeout:g} s: {self.log()[-2000:]}")

    def health(self) -> dict | None:
        """`/health`'s answer, None while it does not answer 200; `warm` is true for a
        version of chatsvc without a warm-up."""
        try:
            response = httpx.get(f"{self.url}/health", timeout=2)
        except httpx.HTTPError:
            return None
        return {"warm": True, **response.json()} if response.status_code == 200 else None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def log(self, since: int = 0) -> str:
        """The log from byte offset `since` on."""
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def crashes(self, since: int = 0) -> list[str]:
        """Lines that show an unhandled exception, in the log from byte `since` on."""
        return [line for line in self.log(since).splitlines() if _CRASH.search(line)]

    def pids(self) -> list[int]:
        """The service's process and its workers (`CHATSVC_WORKERS`), Linux /proc."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [pid, *map(int, children)]

    def memory_kib(self) -> dict[str, int]:
        """Resident memory of the service's processes together (Linux /proc): total,
        anonymous (the heap) and file-backed (shared libraries, the mmap'd database)."""
        totals = {"rss": 0, "anon": 0, "file": 0}
        for pid in self.pids():
            status = Path(f"/proc/{pid}/status").read_text()
            for name, key in (("rss", "VmRSS"), ("anon", "RssAnon"), ("file", "RssFile")):
                totals[name] += int(re.search(rf"{key}:\s+(\d+) kB", status).group(1))
        return totals

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids())

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
