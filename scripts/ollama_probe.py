"""Exit 0 when Ollama answers at the URL given (default $OLLAMA_URL, else
http://localhost:11434), 1 otherwise. scripts/serve.sh asks this before anything opens
the database, to choose the embedder.

Standard library only, run as a file: `from chatsvc.local_models import ...` imported
the whole service (chatsvc/__init__.py) for one GET, most of serve.sh's time to the
first /health. The service's own check is chatsvc.local_models.ollama_reachable.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

DEFAULT_URL = "http://localhost:11434"
TIMEOUT_SECONDS = 1.0


def reachable(url: str, timeout: float = TIMEOUT_SECONDS) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):  # refused, timed out, HTTP error status, not a URL
        return False


def main(argv: list[str]) -> int:
    url = argv[1] if len(argv) > 1 else os.environ.get("OLLAMA_URL") or DEFAULT_URL
    return 0 if reachable(url) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
