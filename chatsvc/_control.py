"""Control characters that text a person sends may not hold.

C0 controls and DEL, but tab, newline and carriage return: never meaningful in text a
person wrote, and NUL truncates strings in C consumers downstream. One rule for every
way in: the HTTP routes, imports, and the tools an agent calls.
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
RULE = "must not contain control characters (NUL, ESC, ...)"


def has_control(text: str) -> bool:
    return CONTROL.search(text) is not None
