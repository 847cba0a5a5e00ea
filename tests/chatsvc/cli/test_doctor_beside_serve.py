"""`chatsvc doctor` beside scripts/serve.sh's configuration reports no false FAIL."""

from __future__ import annotations

import pytest

from chatsvc.cli import main
from chatsvc.cli._common import cli_settings
from chatsvc.local_models import QWEN
from chatsvc.testing import ServiceProcess

pytestmark = pytest.mark.slow  # starts the real local LLM


def test_doctor_checks_the_configuration_serve_sh_runs(tmp_path, monkeypatch, capsys):
    data_dir = tmp_path / "data"
    # What scripts/serve.sh runs when no LLM is configured and Ollama is not reachable.
    service = ServiceProcess(data_dir, {"CHATSVC_LOCAL_MODELS": "auto",
                                        "CHATSVC_EMBEDDINGS": "local",
                                        "OLLAMA_URL": "http://127.0.0.1:9"})
    # The README's `.venv/bin/chatsvc doctor` from a plain shell: none of serve's settings.
    for var in ("CHATSVC_EMBEDDINGS", "CHATSVC_LOCAL_MODELS"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("CHATSVC_DATA_DIR", str(data_dir))
    try:
        service.start(timeout=240)
        code = main(["doctor"])
        out = capsys.readouterr().out
        assert "FAIL" not in out and code == 0, out
        assert f"{QWEN.name} at http://127.0.0.1:" in out  # the model serve started
    finally:
        service.stop()
    # Once the service stops, its loopback LLM is no longer what the commands use.
    assert cli_settings().llm_base_url == "http://127.0.0.1:9/v1"
