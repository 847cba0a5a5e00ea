"""chatsvc extract-facts [--user NAME]: one extraction run now (all users with new
messages, or one). Uses the LLM of a `chatsvc serve` running on the data dir; else starts
the bundled local LLM like `serve` when none is configured."""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from chatsvc._services import Services
from chatsvc.cli._common import cli_settings, require_database
from chatsvc.cli._serve import local_overrides


def register(subparsers) -> None:
    parser = subparsers.add_parser("extract-facts", help="extract facts from new messages now")
    parser.add_argument("--user", help="only this user (default: every user with new messages)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        settings = cli_settings()
        require_database(settings)  # before the local LLM writes its files there
        settings = local_overrides(settings, stack)
        return asyncio.run(_extract(Services.open(settings), args.user))


async def _extract(services: Services, name: str | None) -> int:
    try:
        if name is None:
            results = await services.extractor.run_all()
        else:
            user = services.stores.users.named(name)
            results = {user.id: await services.extractor.run_user(user.id)}
        names = {u.id: u.name for u in services.stores.users.list()}
        for user_id, result in results.items():
            print(f"{names.get(user_id, user_id)}: {result.processed_messages} messages, "
                  f"{result.new_facts} new, {result.referenced} referenced, "
                  f"{result.superseded} superseded, sheet {result.fact_sheet_id or '-'}"
                  + "".join(f"; error: {e}" for e in result.errors))
        if not results:
            print("no new messages")
        return 1 if any(r.failed_batches for r in results.values()) else 0
    finally:
        await services.aclose()
