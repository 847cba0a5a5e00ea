"""What a results file says about the machine it ran on: measured by this run, so a
rerun elsewhere never inherits another machine's description.

The load average is read twice: when this module is imported (every benchmark imports
it before its work starts) and when `describe()` is called (usually as the results are
written), so a load that changed during the run shows."""

from __future__ import annotations

import os
import platform

_AT_START = os.getloadavg()[0]


def describe() -> str:
    now = os.getloadavg()[0]
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, load average {_AT_START:.1f} when the run "
            f"started and {now:.1f} when this was written (wall-clock figures include "
            "waiting for a core when it is above the core count)")
