"""How a setting's raw environment string becomes a typed value: each parser returns
the value or raises ValueError saying what was expected (`Settings.from_env` puts the
variable's name and the fix around it)."""

from __future__ import annotations


def positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a whole number") from None
    if value <= 0:
        raise ValueError("expected a number above 0")
    return value


def count(raw: str) -> int:
    """A whole number, 0 allowed (e.g. no retries)."""
    return 0 if raw == "0" else positive_int(raw)


def positive_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number of seconds") from None
    if value <= 0:
        raise ValueError("expected a number above 0")
    return value


def unit_interval(raw: str) -> float:
    """A number from 0 to 1 (a cosine distance threshold, a share)."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number from 0 to 1") from None
    if not 0 <= value <= 1:
        raise ValueError("expected a number from 0 to 1")
    return value


def seconds_or_off(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number of seconds (0 = off)") from None
    if value < 0:
        raise ValueError("expected 0 (off) or a number of seconds above 0")
    return value


def log_level(raw: str) -> str:
    level = raw.upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError("use DEBUG, INFO, WARNING or ERROR")
    return level


def flag(raw: str) -> bool:
    value = raw.lower()
    if value not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        raise ValueError("use 1/true/yes/on or 0/false/no/off")
    return value in ("1", "true", "yes", "on")


def text(raw: str) -> str:
    return raw


def prefix(raw: str) -> str:
    # Prefixes end in a space that env files tend to lose; keep what the user wrote,
    # the strip in from_env only removes surrounding whitespace we put back here.
    return raw if raw.endswith(" ") else raw + " "
