"""Helpers shared by sub-commands: settings and services opened from the environment."""

from __future__ import annotations

import sys

from chatsvc._services import Services
from chatsvc._settings import Settings


def open_services() -> Services:
    return Services.open(Settings.from_env())


def fail(message: str, code: int = 1) -> int:
    print(f"chatsvc: {message}", file=sys.stderr)
    return code
