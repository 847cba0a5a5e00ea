"""chatsvc doctor: each dependency, ok or what is wrong and how to fix it.

Before the first `chatsvc serve` or `chatsvc users add` there is no database yet: the
checks then run on a throwaway one, and the database line says where it will be, so
`doctor` never leaves an empty database (or data dir) behind."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
from pathlib import Path

from chatsvc._health import Check
from chatsvc._services import Services
from chatsvc.cli._common import NoDatabase, cli_settings, database_location, require_database


def register(subparsers) -> None:
    subparsers.add_parser("doctor", help="check every dependency").set_defaults(run=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    settings = cli_settings()
    with contextlib.ExitStack() as stack:
        try:
            require_database(settings)
            missing = None
        except NoDatabase:
            missing = database_location(settings)
            throwaway = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            settings = settings.with_overrides(data_dir=throwaway)
        checks = asyncio.run(_checks(Services.open(settings)))
    if missing:
        checks["database"] = Check(True, f"none yet at {missing}: `chatsvc serve` or "
                                         "`chatsvc users add NAME` creates it there")
    for name, check in checks.items():
        mark = "ok  " if check.ok else "FAIL"
        print(f"{mark} {name:<18} {check.detail}")
        if not check.ok and check.fix:
            print(f"     {'':<18} fix: {check.fix}")
    return 0 if all(c.ok for c in checks.values()) else 1


async def _checks(services: Services) -> dict:
    try:
        return await services.health.checks(fresh=True)
    finally:
        await services.aclose()
