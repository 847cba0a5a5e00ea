"""`chatsvc serve` records the settings it runs with; the other commands apply them."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

from chatsvc import Settings
from chatsvc.cli import _served, build_parser
from chatsvc.cli._common import cli_settings


def _served_settings(monkeypatch, **env: str) -> Settings:
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    return Settings.from_env().with_overrides(
        llm_base_url="http://127.0.0.1:5555/v1", llm_model="gemma-3-270m",
        llm_max_tokens=512, llm_context_tokens=8192,
    ).validated()


def test_commands_apply_the_running_services_settings(monkeypatch, capsys):
    served = _served_settings(monkeypatch, LLM_API_KEY="sk-secret")
    with contextlib.ExitStack() as stack:
        path = _served.record(served, stack)
        assert "sk-secret" not in path.read_text()  # secrets are never written
        assert json.loads(path.read_text())["secrets_set"] == ["LLM_API_KEY"]
        # Another shell: other embeddings, no key, none of serve's own settings.
        monkeypatch.setenv("CHATSVC_EMBEDDINGS", "ollama")
        monkeypatch.delenv("LLM_API_KEY")
        monkeypatch.delenv("LLM_BASE_URL")
        settings = cli_settings()
        assert (settings.embeddings, settings.embed_model, settings.embed_dim) == (
            "local", "multilingual-e5-small", 384)
        assert (settings.llm_base_url, settings.llm_max_tokens) == (
            "http://127.0.0.1:5555/v1", 512)
        assert settings.llm_api_key is None
        err = capsys.readouterr().err
        assert f"running `chatsvc serve` (pid {os.getpid()}" in err
        assert "CHATSVC_EMBEDDINGS here differs from the service's 'local'" in err
        assert "the service has LLM_API_KEY set but this shell does not" in err
    assert not path.exists()  # removed when serve stops
    assert cli_settings().embeddings == "ollama"


def test_a_file_left_by_a_dead_service_is_ignored(monkeypatch):
    served = _served_settings(monkeypatch)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with contextlib.ExitStack() as stack:
        path = _served.record(served, stack)
        recorded = json.loads(path.read_text())
        path.write_text(json.dumps({**recorded, "pid": int(dead.stdout)}))
        monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
        assert cli_settings().llm_base_url == "http://127.0.0.1:9/v1"


def test_help_describes_the_command_in_whole_sentences():
    description = build_parser().description  # was a docstring's first line, cut mid-sentence
    assert description.endswith(
        "long-term user memory. Settings come from the environment (docs/configuration.md); "
        "beside a running `chatsvc serve`, the other commands use the settings it runs with.")


RECORD_OFTEN = """
import contextlib, sys
from pathlib import Path
from chatsvc import Settings
from chatsvc.cli import _served
settings = Settings.from_env().with_overrides(data_dir=Path(sys.argv[1])).validated()
for _ in range(100):
    with contextlib.ExitStack() as stack:
        _served.record(settings, stack)
"""


def test_services_starting_side_by_side_on_one_data_dir_both_record(tmp_path):
    replicas = [subprocess.Popen([sys.executable, "-c", RECORD_OFTEN, str(tmp_path)],
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for replica in replicas:
        assert replica.wait(timeout=120) == 0, replica.stderr.read()
    assert list(tmp_path.glob("*.tmp")) == []


def test_the_first_of_two_services_to_stop_leaves_the_others_record(monkeypatch):
    served = _served_settings(monkeypatch)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with contextlib.ExitStack() as stack:
            path = _served.record(served, stack)
            recorded = json.loads(path.read_text())
            path.write_text(json.dumps({**recorded, "pid": other.pid}))  # it started since
        assert json.loads(path.read_text())["pid"] == other.pid
    finally:
        other.kill()
        other.wait()
