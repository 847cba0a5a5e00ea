"""The settings a running `chatsvc serve` applied, for the other commands on its data dir.

`serve` fills in settings of its own: the bundled local models with their limits
(`local_overrides`) and what scripts/serve.sh exports (CHATSVC_EMBEDDINGS=local when
Ollama is not reachable). A `doctor` or `reindex` run from a plain shell would check
or use another configuration than the service's. So while it runs, `serve` keeps
every non-secret effective setting in <data dir>/serve-settings.json, and the other
commands apply them over their environment. Secrets (keys, the database URL, which
may hold a password) are never written: the file only says which ones were set.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import fields
from pathlib import Path

from chatsvc._settings import Settings, env_var

FILE_NAME = "serve-settings.json"
SECRETS = ("llm_api_key", "embed_api_key", "database_url", "metrics_token", "jwt_secret")
# The file is found through the data dir, and `explicit` is bookkeeping.
_NOT_RECORDED = (*SECRETS, "data_dir", "explicit")


def settings_file(data_dir: Path) -> Path:
    return data_dir / FILE_NAME


def record(settings: Settings, stack: contextlib.ExitStack) -> Path:
    """Write what this service runs with; removed again when `stack` closes."""
    path = settings_file(settings.data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    recorded = {
        "pid": os.getpid(),
        "settings": {f.name: getattr(settings, f.name) for f in fields(settings)
                     if f.name not in _NOT_RECORDED},
        "secrets_set": [env_var(name) for name in SECRETS if getattr(settings, name)],
    }
    # A temporary file of its own: replicas sharing a data dir start side by side.
    partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    partial.replace(path)
    stack.callback(_forget, path)
    return path


def _forget(path: Path) -> None:
    """Remove the record if it is still this process's (another service on the data dir
    may have written its own since)."""
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink(missing_ok=True)
    except (OSError, ValueError):
        pass


def applied(settings: Settings) -> Settings:
    """`settings` (from this process's environment) with the running service's
    recorded settings over them; unchanged when no service runs on the data dir."""
    path = settings_file(settings.data_dir)
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        return settings
    if not _running(recorded.get("pid")):
        return settings  # left behind by a service that did not exit cleanly
    served = settings.with_overrides(**recorded["settings"]).validated()
    _note(f"using the settings of the running `chatsvc serve` (pid {recorded['pid']}, {path})")
    for name, value in recorded["settings"].items():
        if name in settings.explicit and getattr(settings, name) != value:
            _note(f"{env_var(name)} here differs from the service's {value!r}: "
                  "the service's applies")
    for var in recorded.get("secrets_set", []):
        if not os.environ.get(var):
            _note(f"the service has {var} set but this shell does not: set it here too")
    return served


def _running(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def _note(message: str) -> None:
    print(f"chatsvc: {message}", file=sys.stderr)
