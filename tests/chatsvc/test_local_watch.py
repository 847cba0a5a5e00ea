"""What the bundled model's status says after crashes, and who may read it."""

from __future__ import annotations

import signal

from chatsvc.local_watch import ModelStatus, exit_description, is_fault, read_status, state_path

BASE_URL = "http://127.0.0.1:41234/v1"


def status(tmp_path, **changes) -> ModelStatus:
    fields = {"model": "gemma-3-270m", "base_url": BASE_URL, "log": str(tmp_path / "g.log"),
              "cpu": "fast", "cpu_reason": "no unusable AMX found", "max_restarts": 3}
    return ModelStatus(**{**fields, **changes})


def test_exit_codes_are_named():
    assert exit_description(-signal.SIGKILL) == "signal 9 (SIGKILL)"
    assert exit_description(-signal.SIGSEGV) == "signal 11 (SIGSEGV)"
    assert exit_description(1) == "exit code 1"


def test_only_faults_count_against_the_fast_path():
    assert is_fault(-signal.SIGSEGV) and is_fault(-signal.SIGILL)
    assert not is_fault(-signal.SIGKILL)  # the OOM killer, an operator
    assert not is_fault(-signal.SIGTERM) and not is_fault(1)


def test_a_crash_is_named_with_its_signal_time_restarts_and_log(tmp_path):
    (tmp_path / "g.log").write_text("load_tensors: CPU model buffer\n" * 30 + "last line\n")
    model = status(tmp_path)
    crash = model.crashed(-signal.SIGSEGV)
    model.state, model.restarts = "up", 1
    assert crash["log_tail"][-1] == "last line" and len(crash["log_tail"]) == 20
    assert model.summary() == (
        f"bundled, CPU path fast (no unusable AMX found); the bundled model crashed with "
        f"signal 11 (SIGSEGV) at {crash['at']}; restarted 1 time; log: {tmp_path / 'g.log'}")


def test_a_model_given_up_on_says_so_and_how_to_fix_it(tmp_path):
    model = status(tmp_path)
    for _ in range(4):
        model.crashed(-signal.SIGKILL)
    model.state, model.restarts = "down", 3
    assert "restarted 3 times, then given up (4 crashes in a row)" in model.summary()
    assert model.fix().startswith(f"read {tmp_path / 'g.log'}, then restart chatsvc")


def test_the_status_is_read_back_only_for_the_url_it_serves(tmp_path):
    model = status(tmp_path, state="restarting", restarts=1)
    model.crashed(-signal.SIGKILL)
    model.save(state_path(tmp_path, model.model))
    assert read_status(tmp_path, model.model, BASE_URL) == model
    # A service configured with another upstream does not report this model.
    assert read_status(tmp_path, model.model, "http://127.0.0.1:9/v1") is None
    assert read_status(tmp_path, "qwen2.5-coder-1.5b-instruct", BASE_URL) is None
