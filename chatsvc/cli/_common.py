"""Helpers shared by sub-commands: settings and services opened from the environment."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from chatsvc._services import Services
from chatsvc._settings import Settings
from chatsvc.cli import _served


class NoDatabase(Exception):
    """A command that needs the database found none where the settings point."""


def cli_settings() -> Settings:
    """The environment's settings, under those of a `chatsvc serve` running on the same
    data dir (so every command sees the configuration the service runs with)."""
    return _served.applied(Settings.from_env())


def database_location(settings: Settings) -> str:
    """Where the commands look for the data, as an operator can check it."""
    if settings.database_url:
        return "the PostgreSQL database of CHATSVC_DATABASE_URL"
    return str(settings.database_path.absolute())


def require_database(settings: Settings) -> None:
    """Refuse before anything is written: opening a SQLite path creates it, and a data
    dir relative to another working directory would leave an empty database there."""
    if settings.database_url or settings.database_path.exists():
        return
    relative = "" if settings.data_dir.is_absolute() else (
        f"CHATSVC_DATA_DIR ({settings.data_dir}) is relative to the working directory; ")
    raise NoDatabase(
        f"no database at {database_location(settings)}: {relative}set CHATSVC_DATA_DIR to "
        "the data dir `chatsvc serve` uses, or create a database with `chatsvc users add NAME`")


def open_services(*, create: bool = False) -> Services:
    """The services on the configured database; only `create=True` (serve, users add)
    may start a new one."""
    settings = cli_settings()
    if not create:
        require_database(settings)
    return Services.open(settings)


def fail(message: str, code: int = 1) -> int:
    print(f"chatsvc: {message}", file=sys.stderr)
    return code


@contextmanager
def services_open(*, create: bool = False) -> Iterator[Services]:
    """`open_services()` for one command, its database closed after; store errors
    (no such user, ...) reach `main`, which prints them."""
    services = open_services(create=create)
    try:
        yield services
    finally:
        services.stores.db.close()
