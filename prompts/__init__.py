"""Prompt templates as text files (prompts/templates/*.txt) and a tiny loader."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    """The template `name` (without .txt), exactly as stored."""
    return resources.files("prompts").joinpath("templates", f"{name}.txt").read_text("utf-8")
