"""The bundled model's process, watched: a crash is named, the model comes back on the
same port (on the safe CPU path after a fault on the fast one), and restarts end."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable

import httpx
import pytest

from chatsvc.local_cpu import amx_problem
from chatsvc.local_models import GEMMA, LlamaServer
from chatsvc.local_watch import ModelStatus, read_status
from chatsvc.testing import bundled_llm_cpu
from tests.chatsvc.test_local_cpu import SAPPHIRE_RAPIDS

pytestmark = pytest.mark.slow  # the real Gemma 3 270M

# llama.cpp's load line for weights repacked into an extra buffer type (AVX2 here: 12.7
# of Gemma's 248 MiB; Qwen 1.5B: 597 of 1656 MiB).
REPACKED = re.compile(r"(CPU_REPACK|AMX) model buffer size")


def status_when(server: LlamaServer, ready: Callable[[ModelStatus], bool],
                timeout: float = 120) -> ModelStatus:
    """The server's recorded status, once `ready` holds for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = read_status(server.cache_dir, GEMMA.name, server.base_url)
        if status is not None and ready(status):
            return status
        time.sleep(0.2)
    raise AssertionError(f"no such status in {timeout} s: {status}")


def started(server: LlamaServer) -> ModelStatus:
    """The status of a server just started (its pid, any crash on the way up)."""
    return status_when(server, lambda s: s.state == "up" and s.pid == server.pid)


def answer(base_url: str) -> str:
    response = httpx.post(f"{base_url}/chat/completions", timeout=120, json={
        "model": GEMMA.name, "max_tokens": 8,
        "messages": [{"role": "user", "content": "Name one colour."}]})
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def test_unusable_amx_loads_the_model_without_repacking_its_weights(tmp_path):
    unusable = lambda: amx_problem(SAPPHIRE_RAPIDS, granted=lambda: False)  # noqa: E731
    with LlamaServer(tmp_path, threads=1, probe=unusable) as server:
        assert server.cpu_path.safe
        assert answer(server.base_url).strip()
        log = server.log_path.read_text()
    assert "loading the model without extra buffer types" in log
    assert not REPACKED.search(log)


def test_the_fast_path_repacks_the_weights_here(tmp_path):
    """The counterpart of the test above: the fast path repacks (on a host where that
    crashes, it did before the server came back on the safe path)."""
    with LlamaServer(tmp_path, threads=1, cpu="fast") as server:
        log = server.log_path.read_text()
    assert REPACKED.search(log)


def test_a_fault_on_the_fast_path_brings_the_model_back_on_the_safe_one(tmp_path):
    with LlamaServer(tmp_path, threads=1, cpu="fast", restarts=1) as server:
        base_url, first = server.base_url, server.pid
        status = started(server)
        if not status.crashes:  # the fast path runs here: fault it as AMX without tile
            os.kill(first, signal.SIGSEGV)  # state does
            status = status_when(server, lambda s: s.state == "up" and s.pid != first)
        # else it died on its own first completion already (an Intel AMX host that
        # grants the tile state did), and came back on the safe path before it answered
        assert server.base_url == base_url  # where the LLM client already talks to
        assert answer(base_url).strip()
    assert (status.cpu, status.restarts) == ("safe", 1)
    assert status.cpu_reason == "the fast path crashed with signal 11 (SIGSEGV)"
    assert (status.crashes[-1]["exit"], status.crashes[-1]["cpu"]) == (
        "signal 11 (SIGSEGV)", "fast")


def test_a_model_that_keeps_dying_is_given_up_on(tmp_path):
    with LlamaServer(tmp_path, threads=1, cpu=bundled_llm_cpu(), restarts=1) as server:
        first, path = server.pid, server.cpu_path.name
        restarted = started(server)
        if not restarted.crashes:  # else the host's fast path spent the restart on its own
            os.kill(first, signal.SIGKILL)  # first completion (see the test above)
            restarted = status_when(server, lambda s: s.state == "up" and s.pid != first)
            assert restarted.cpu == path  # a kill is no reason to change the CPU path
        os.kill(restarted.pid, signal.SIGKILL)
        down = status_when(server, lambda s: s.state == "down")
        with pytest.raises(httpx.ConnectError):
            answer(server.base_url)
    assert (down.restarts, len(down.crashes)) == (1, 2)
    assert "then given up (2 crashes in a row)" in down.summary()
    # Once stopped, it reports nothing: a service on another upstream reads no leftover.
    assert read_status(tmp_path, GEMMA.name, server.base_url) is None
