import json

from evals.reliability import fuzz


def test_the_report_counts_generated_runs_and_shows_each_failure_and_traceback(
        tmp_path, monkeypatch):
    monkeypatch.setattr(fuzz, "RESULTS", tmp_path)
    runs = [
        {"operation": "GET /api/facts", "user": "user", "mode": "positive", "seconds": 1.0,
         "generated": True, "failure": None},
        {"operation": "GET /api/facts", "user": "admin", "mode": "negative", "seconds": 1.0,
         "generated": True, "failure": "Server error: 500"},
        {"operation": "GET /health", "user": "user", "mode": "negative", "seconds": 0.0,
         "generated": False, "failure": None},
    ]
    fuzz.write({"machine": "a box", "examples": 40, "only": [], "seconds": 3, "runs": runs,
                "tracebacks": ["Traceback (most recent call last): boom"]})
    report = (tmp_path / "fuzz.md").read_text()
    assert "**Runs that failed: 1 of 2. Tracebacks in the service's log: 1.**" in report
    assert "## GET /api/facts as admin, negative" in report and "Server error: 500" in report
    assert "1 invalid-request runs had nothing to make invalid" in report
    assert "boom" in report
    assert json.loads((tmp_path / "fuzz.json").read_text())["runs"] == runs
