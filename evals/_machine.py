"""What a results file says about the machine it ran on: measured when the run starts,
so a rerun elsewhere never inherits another machine's description."""

from __future__ import annotations

import os
import platform


def describe() -> str:
    load = os.getloadavg()[0]
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, load average {load:.1f} at the start "
            "(wall-clock figures include waiting for a core when it is above the core count)")
