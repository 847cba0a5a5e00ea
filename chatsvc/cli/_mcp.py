"""chatsvc mcp --user NAME: the MCP tools over stdio, as that user (for agents such as
Claude Code or Gemini CLI that start their MCP servers as subprocesses). Everything
but the protocol goes to stderr: stdout carries only MCP messages.

`--print-config` prints the client config that starts this very command from anywhere:
the venv's `chatsvc` by absolute path and the data dir made absolute (a client starts
its servers in a working directory of its own, without this shell's PATH or settings).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import sysconfig
from pathlib import Path

from chatsvc._services import Services
from chatsvc._settings import Settings, env_var
from chatsvc.cli import _served
from chatsvc.cli._common import fail, open_services
from chatsvc.tools import Caller, for_stdio


def register(subparsers) -> None:
    parser = subparsers.add_parser("mcp", help="serve the MCP tools over stdio as one user")
    parser.add_argument("--user", required=True, help="the user whose data the tools use")
    parser.add_argument("--print-config", action="store_true",
                        help="print an MCP client config (JSON) that starts this command")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(open_services(), args.user, config_only=args.print_config))


async def _serve(services: Services, name: str, *, config_only: bool) -> int:
    try:
        user = services.stores.users.named(name)
        if user.revoked_at:
            return fail(f"{name!r} is revoked (chatsvc users list)")
        if config_only:
            print(json.dumps(client_config(name), indent=2))
            return 0
        await for_stdio(Caller(services, user)).run_stdio_async()
        return 0
    finally:
        await services.aclose()


def client_config(name: str) -> dict:
    """`{"mcpServers": {"chatsvc": ...}}` with absolute paths and this shell's settings
    (secrets left out, named on stderr: a config file is no place for them)."""
    script = Path(sysconfig.get_path("scripts")) / "chatsvc"
    if script.exists():
        command, args = str(script), ["mcp", "--user", name]
    else:  # chatsvc imported from a checkout, not installed with its script
        command, args = str(Path(sys.executable).absolute()), ["-m", "chatsvc", "mcp",
                                                               "--user", name]
    here = Settings.from_env()
    set_here = here.explicit
    env = {env_var(field): os.environ[env_var(field)].strip() for field in sorted(set_here)
           if field not in (*_served.SECRETS, "data_dir")}
    env[env_var("data_dir")] = str(here.data_dir.absolute())
    left_out = [env_var(field) for field in _served.SECRETS if field in set_here]
    if left_out:
        print(f"chatsvc: {', '.join(left_out)} set here but not written into the config: "
              "add them to its env if the server needs them", file=sys.stderr)
    return {"mcpServers": {"chatsvc": {"command": command, "args": args, "env": env}}}
