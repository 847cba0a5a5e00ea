"""The MCP docs against the real thing: docs/tools.md's Python client runs, as written,
against a real `chatsvc serve`, and every list of the MCP tools in the docs names exactly
the tools the server offers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from chatsvc.testing import ServiceProcess
from chatsvc.tools._mcp import for_http

ROOT = Path(__file__).resolve().parent.parent
TOOLS_MD = ROOT / "docs" / "tools.md"
API_MD = ROOT / "docs" / "api.md"
README = ROOT / "README.md"


def served_tools() -> set[str]:
    """The tool catalog the MCP server lists (the same over HTTP and stdio)."""
    return {tool.name for tool in anyio.run(for_http().list_tools)}


def section(path: Path, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    text = path.read_text("utf-8")
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ", 1)[0]
    end = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start + len(heading) + 2)
    return text[start : end.start() if end else len(text)]


def python_block(path: Path, heading: str) -> str:
    found = re.search(r"^```python\n(.*?)^```", section(path, heading), re.M | re.S)
    assert found, f"no python block under {heading!r} in {path.name}"
    return found.group(1)


def names(text: str) -> list[str]:
    return re.findall(r"`([a-z_]+)`", text)


def test_every_list_of_mcp_tools_in_the_docs_matches_the_server():
    catalog = served_tools()
    assert len(catalog) == 7, catalog  # the parsing below must find something to compare
    api = re.search(r"\[tools\]\(tools\.md\): (.+?)\. ", section(API_MD, "## MCP"), re.S)
    table = re.findall(r"^\| `([a-z_]+)` \|", section(TOOLS_MD, "## The tools"), re.M)
    readme = re.search(r"serves its memory tools \((.+?)\)",
                       section(README, "### Other agents: MCP"), re.S)
    assert sorted(names(api.group(1))) == sorted(catalog)
    assert sorted(table) == sorted(catalog)
    assert sorted(names(readme.group(1))) == sorted(catalog)


@pytest.mark.slow  # a real service with the local embedder
def test_the_python_client_in_tools_md_runs_against_a_real_service(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(python_block(TOOLS_MD, "### A Python client"))
    service = ServiceProcess(tmp_path / "data", {
        "CHATSVC_EMBEDDINGS": "local", "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "CHATSVC_EXTRACT_INTERVAL": "0"})
    token = service.add_user("alice")
    try:
        service.start(timeout=180)
        ran = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
            timeout=120, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                              "CHATSVC_URL": service.url, "CHATSVC_TOKEN": token})
    finally:
        service.stop()
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "tools: " + ", ".join(sorted(served_tools()))
    distance, content = lines[1].split("  ", 1)
    assert content == "Prefers window seats on trains" and 0 <= float(distance) < 1
    assert service.crashes() == []
