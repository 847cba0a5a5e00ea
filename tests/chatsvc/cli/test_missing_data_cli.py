"""Run from the wrong directory (CHATSVC_DATA_DIR's default ./data is relative), no
command but `serve` and `users add` creates a database: each says where it looked, with
an absolute path, exits non-zero and leaves no empty data dir behind."""

from __future__ import annotations

import pytest

from chatsvc.cli import main

NEEDS_THE_DATABASE = [
    ["mcp", "--user", "admin"], ["mcp", "--user", "admin", "--print-config"],
    ["users", "list"], ["users", "revoke", "admin"], ["users", "export", "admin"],
    ["users", "delete", "admin", "--yes"], ["backup", "copy.sqlite3"], ["index", "docs"],
    ["embed"], ["embed-facts"], ["reindex"], ["import", "conversations.json", "--user", "admin"],
    ["extract-facts"], ["extract-facts", "--user", "admin"],
]


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A working directory with no data dir, and the default (relative) CHATSVC_DATA_DIR."""
    monkeypatch.delenv("CHATSVC_DATA_DIR")
    cwd = tmp_path / "elsewhere"
    (cwd / "docs").mkdir(parents=True)
    (cwd / "docs" / "note.md").write_text("# Note\n\nA note.")
    (cwd / "conversations.json").write_text("[]")
    monkeypatch.chdir(cwd)
    return cwd


@pytest.mark.parametrize("argv", NEEDS_THE_DATABASE, ids=" ".join)
def test_a_command_without_its_database_says_where_it_looked(elsewhere, capsys, argv):
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert f"no database at {elsewhere / 'data' / 'chatsvc.sqlite3'}: " in captured.err
    assert "CHATSVC_DATA_DIR (data) is relative to the working directory" in captured.err
    assert captured.out == ""
    assert sorted(p.name for p in elsewhere.iterdir()) == ["conversations.json", "docs"]


def test_a_missing_user_names_the_database_looked_in(elsewhere, capsys):
    assert main(["users", "add", "alice"]) == 0
    database = elsewhere / "data" / "chatsvc.sqlite3"
    assert f"created user alice in {database}; " in capsys.readouterr().out
    for argv in (["mcp", "--user", "admin"], ["mcp", "--user", "admin", "--print-config"],
                 ["users", "export", "admin"], ["import", "conversations.json", "--user", "admin"]):
        assert main(argv) == 1
        assert f"no user named 'admin' in {database} (chatsvc users list)" in (
            capsys.readouterr().err)


def test_doctor_before_the_first_start_creates_nothing(elsewhere, capsys):
    main(["doctor"])  # the LLM is on a closed port in tests: FAIL llm, but every check prints
    out = capsys.readouterr().out
    assert (f"ok   database           none yet at {elsewhere / 'data' / 'chatsvc.sqlite3'}: "
            "`chatsvc serve` or `chatsvc users add NAME` creates it there") in out
    assert "ok   vector_store" in out and "ok   embeddings " in out
    assert not (elsewhere / "data").exists()
