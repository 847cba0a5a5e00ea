"""`chatsvc serve` on the bundled model: a `kill -9` of the model mid-turn ends that turn
with an `error` event, `/health` and `chatsvc doctor` name the crash, and the next turn
is answered by the model the service restarted."""

from __future__ import annotations

import json
import os
import signal
import time

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.cli import main
from chatsvc.local_cpu import choose_cpu_path
from chatsvc.local_models import GEMMA, models_dir
from chatsvc.local_watch import state_path
from chatsvc.testing import ServiceProcess, bundled_llm_cpu

pytestmark = pytest.mark.slow  # starts the real local LLM


@pytest.fixture
def service(tmp_path):
    service = ServiceProcess(tmp_path / "data", {
        "CHATSVC_LOCAL_MODELS": "auto", "CHATSVC_LOCAL_LLM": GEMMA.name,
        "CHATSVC_EMBEDDINGS": "local", "OLLAMA_URL": "http://127.0.0.1:9",
        "CHATSVC_HEALTH_CACHE_SECONDS": "0.1", "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        # Short answers: the turn after the crash must end within its timeouts on a busy
        # 2-core machine, where Gemma may ramble for serve's 512 tokens.
        "LLM_MAX_TOKENS": "48"})
    service.start(timeout=240)
    service.token = service.add_user("alice")
    yield service
    service.stop()


def turn(service: ServiceProcess, message: str, on_first_delta=lambda: None
         ) -> tuple[list[str], dict]:
    """The event kinds of one streamed turn and its last event's data; `on_first_delta`
    runs when text arrives."""
    kinds, data = [], {}
    headers = {"Authorization": f"Bearer {service.token}"}
    with httpx.Client(base_url=service.url, headers=headers, timeout=300) as http, \
            connect_sse(http, "POST", "/api/chat", json={"message": message}) as source:
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            if event.event == "delta" and "delta" not in kinds:
                on_first_delta()
            if event.data:  # not a keep-alive ping
                kinds.append(event.event)
                data = json.loads(event.data)
    return kinds, data


def llm_check(service: ServiceProcess) -> dict:
    health = httpx.get(f"{service.url}/health", timeout=10,
                       headers={"Authorization": f"Bearer {service.token}"}).json()
    return health["checks"]["llm"]


def model_status(service: ServiceProcess) -> dict:
    return json.loads(state_path(models_dir(service.data_dir), GEMMA.name).read_text())


def test_a_killed_model_ends_the_turn_is_named_and_answers_the_next(service, monkeypatch,
                                                                    capsys):
    health = httpx.get(f"{service.url}/health", timeout=10,
                       headers={"Authorization": f"Bearer {service.token}"}).json()
    assert "llm completion" in health["checks"]["warm"]["detail"]  # the start-up self-test
    started = model_status(service)
    cpu = choose_cpu_path(bundled_llm_cpu()).name
    if started["crashes"]:  # this host's fast path died on its first completion (an
        # Intel AMX host that grants the tile state did): the watcher moved it to safe
        assert (cpu, started["cpu"], started["crashes"][-1]["cpu"]) == ("fast", "safe", "fast")
        cpu = "safe"
    assert f"CPU path {cpu} (" in llm_check(service)["detail"]
    first = started["pid"]

    kinds, last = turn(service, "Tell me a long story about a lighthouse keeper.",
                       on_first_delta=lambda: os.kill(first, signal.SIGKILL))
    assert kinds[0] == "meta" and kinds[-1] == "error", (kinds, last)

    deadline = time.monotonic() + 120
    restarted = f"restarted {started['restarts'] + 1} time"  # after the start-up's own
    while (check := llm_check(service))["ok"] is False or restarted not in check["detail"]:
        assert time.monotonic() < deadline, check
        time.sleep(0.2)
    assert "the bundled model crashed with signal 9 (SIGKILL) at " in check["detail"]
    assert f"log: {models_dir(service.data_dir) / GEMMA.name}.log" in check["detail"]
    assert model_status(service)["pid"] != first
    # The service's log says how it died and what the model itself printed last.
    assert "exited with signal 9 (SIGKILL) on the" in service.log()

    # `chatsvc doctor` beside the service reports the same.
    monkeypatch.setenv("CHATSVC_DATA_DIR", str(service.data_dir))
    assert main(["doctor"]) == 0
    assert "crashed with signal 9 (SIGKILL)" in capsys.readouterr().out

    kinds, last = turn(service, "Name one colour.")
    assert kinds[0] == "meta" and "delta" in kinds and kinds[-1] == "done", (kinds, last)
