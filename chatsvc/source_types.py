"""The naming rule for knowledge source types, shared by the API and `chatsvc index`."""

from __future__ import annotations

import re

_PATTERN = re.compile(r"^[a-z0-9_-]{1,32}$")
RULE = "use 1-32 characters a-z, 0-9, _ or -"


def valid(value: str) -> bool:
    return bool(_PATTERN.match(value))
