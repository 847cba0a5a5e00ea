"""The `chatsvc` command line. Each sub-command lives in its own module with a
`register(subparsers)` function; add new ones to COMMANDS."""

from __future__ import annotations

import argparse
import sys

from chatsvc._errors import InvalidAccount, SettingsError
from chatsvc._settings import Settings
from chatsvc.cli import (
    _backup,
    _doctor,
    _extract,
    _import,
    _index,
    _keys,
    _mcp,
    _serve,
    _users,
    _vectors,
)
from chatsvc.cli._common import NoDatabase, database_location, fail
from store import NotFound, StoreError

COMMANDS = [_serve, _users, _keys, _doctor, _vectors, _index, _import, _extract, _backup, _mcp]
DESCRIPTION = (
    "chatsvc: a streaming chat backend with long-term user memory. Settings come from "
    "the environment (docs/configuration.md); beside a running `chatsvc serve`, the other "
    "commands use the settings it runs with."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chatsvc", description=DESCRIPTION)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args) or 0
    except InvalidAccount as exc:  # a name or time zone the admin API refuses too
        return fail(str(exc))
    except SettingsError as exc:
        print(f"chatsvc: configuration error: {exc}", file=sys.stderr)
        return 2
    except NoDatabase as exc:
        return fail(str(exc))
    except NotFound as exc:  # no such user: say which database was looked in
        return fail(f"{exc} in {database_location(Settings.from_env())} (chatsvc users list)")
    except StoreError as exc:  # a user that exists, a busy database...
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
