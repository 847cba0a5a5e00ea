"""Background jobs exclude each other per (job, key) across every process on one store."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest


def test_job_lock_is_exclusive_per_job_and_key_until_released(open_db):
    a, b = open_db(), open_db()  # two handles on one store, as two workers have
    with a.job_lock("fact_extraction", "alice", wait=False) as held:
        assert held
        with b.job_lock("fact_extraction", "alice", wait=False) as other:
            assert not other
        with b.job_lock("fact_extraction", "bob", wait=False) as other:
            assert other
        with b.job_lock("fact_sheet", "alice", wait=False) as other:
            assert other
    with b.job_lock("fact_extraction", "alice", wait=False) as again:
        assert again


HOLDER = """
import sys, time
from store import SqliteDatabase
db = SqliteDatabase(sys.argv[1], embed_model="test-model", embed_dim=8)
with db.job_lock("fact_extraction", "alice", wait=True):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_another_process_holds_it_until_it_dies(open_db, tmp_path):
    db = open_db()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db.path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with db.job_lock("fact_extraction", "alice", wait=False) as held:
            assert not held
    finally:
        holder.kill()
        holder.wait()
    # A crashed holder's lock goes with it.
    deadline = time.monotonic() + 5
    while True:
        with db.job_lock("fact_extraction", "alice", wait=False) as held:
            if held or time.monotonic() > deadline:
                break
        time.sleep(0.05)
    assert held
