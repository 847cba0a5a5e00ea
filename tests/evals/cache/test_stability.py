"""The stability check: fresh processes, other hash seeds, shuffled dict order."""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime

from evals.cache import stability

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_stable_prefix_is_identical_across_processes(services, client, make_user, settings):
    _, headers = make_user("stable-user")
    for fact in ({"category": "core", "fact": "Lives in Lisbon"},
                 {"category": "technical", "fact": "Uses SQLite every day"},
                 {"category": "project", "fact": "Is planning a bike trip"}):
        assert client.post("/api/facts", json=fact, headers=headers).status_code == 201
    memory = {"type": "preference", "content": "Answer briefly", "scope": "global"}
    assert client.post("/api/memory", json=memory, headers=headers).status_code == 201
    assert client.post("/api/fact-sheet/generate", headers=headers).status_code == 201

    result = stability.check(settings.data_dir, "stable-user", AT)
    assert result["identical"] is True
    assert [r["label"] for r in result["runs"]] == [label for label, _, _ in stability.RUNS]
    text = stability.stable_prefix(settings.data_dir, "stable-user", AT)
    assert "Lives in Lisbon" in text and "Answer briefly" in text  # the real layers
    assert stability.describe(text)["sha256"] == result["runs"][0]["sha256"]


def test_a_hash_seed_dependent_output_is_caught():
    # A set's iteration order follows PYTHONHASHSEED: exactly what the check must catch.
    program = ("import json; text = ','.join({'fact', 'memory', 'docs', 'date', 'system'}); "
               "print(json.dumps({'sha256': text, 'text': text, 'bytes': len(text)}))")
    runs = [stability.run_once([sys.executable, "-c", program], seed, seed)
            for seed in ("1", "2")]
    assert stability.compare(runs) is False
    assert stability.compare([runs[0], dict(runs[0])]) is True


def test_shuffled_keeps_the_data_and_changes_the_order():
    data = {"b": 1, "a": {"y": [1, {"q": 1, "p": 2}], "x": 2}, "c": 3, "d": 4, "e": 5}
    orders = {json.dumps(stability.shuffled(data, random.Random(seed))) for seed in range(8)}
    assert len(orders) > 1
    assert all(json.loads(order) == data for order in orders)
