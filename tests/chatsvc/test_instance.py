"""The marks of the processes on a data dir: a live process's mark, in this process or
another, is never taken for a dead one's; a killed process's is, and one that exits
leaves none."""

from __future__ import annotations

import subprocess
import sys

from chatsvc._instance import MARKS, departed, presence
from chatsvc.testing._process import REPO_ROOT

HOLDER = """
import sys, time
from pathlib import Path
from chatsvc._instance import presence
with presence(Path(sys.argv[1]), sys.argv[2]):
    print("marked", flush=True)
    time.sleep(120)
"""


def marked_process(data_dir, owner: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(data_dir), owner],
                             cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "marked\n"
    return child


def test_a_killed_process_is_departed_and_live_ones_are_not(tmp_path):
    live, dead = marked_process(tmp_path, "live"), marked_process(tmp_path, "dead")
    try:
        dead.kill()  # SIGKILL: its mark stays, its lock goes
        dead.wait(10)
        with presence(tmp_path, "this one"):
            found = departed(tmp_path)
    finally:
        live.kill()
        live.wait(10)
    assert list(found) == ["dead"]
    assert found["dead"].read_text() == "dead"  # the mark to remove once its claims are free


def test_a_process_that_ends_leaves_no_mark(tmp_path):
    with presence(tmp_path, "here"):
        assert [mark.read_text() for mark in (tmp_path / MARKS).iterdir()] == ["here"]
    assert list((tmp_path / MARKS).iterdir()) == []
    assert departed(tmp_path) == {}
