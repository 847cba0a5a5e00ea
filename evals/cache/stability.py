"""Is the stable prefix byte-identical across processes, hash seeds and dict order?

    python -m evals.cache.stability --data-dir DIR --user NAME --at 2026-11-20T12:00:00+00:00

prints the stable prefix of NAME at that moment as JSON (sha256, bytes, text), built
by the service's own code (the pinned-snapshot reader and `context.assemble`) from
the data in DIR. `check()` runs that in fresh processes - a restart, another
PYTHONHASHSEED, and dict insertion order shuffled in the snapshot - and compares.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path

RUNS = (
    ("process 1, PYTHONHASHSEED=0", "0", None),
    ("process 2 (restart), PYTHONHASHSEED=12345", "12345", None),
    ("process 3, PYTHONHASHSEED=777, dict insertion order shuffled", "777", 7),
)


def shuffled(value, rng: random.Random):
    """The same data with every dict's keys inserted in a random order (lists kept)."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: shuffled(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value


def stable_prefix(data_dir: Path, user_name: str, at: datetime,
                  shuffle_seed: int | None = None) -> str:
    from chatsvc import Services, Settings
    from chatsvc.chat import stable_snapshot, user_today
    from chatsvc.embeddings import LocalEmbedder
    from context import Dynamic, Snapshot, assemble
    from context.assemble import canonical

    settings = Settings.from_env({**os.environ, "CHATSVC_DATA_DIR": str(data_dir),
                                  "CHATSVC_EMBEDDINGS": "local", "CHATSVC_LOCAL_MODELS": "off"})
    services = Services.open(settings, embedder=LocalEmbedder())
    try:
        user = next(u for u in services.stores.users.list() if u.name == user_name)
        snapshot = asyncio.run(stable_snapshot(services.sources, user, None, None, at))
    finally:
        services.stores.db.close()
    if shuffle_seed is not None:
        data = shuffled(json.loads(snapshot.to_json()), random.Random(shuffle_seed))
        snapshot = Snapshot.from_json(json.dumps(data, ensure_ascii=False))
    assembly = assemble(snapshot=snapshot, today=user_today(user.timezone, at),
                        timezone=user.timezone, dynamic=Dynamic(), history=[], current="-",
                        strategy=settings.context_strategy)
    return canonical(assembly.messages[: assembly.stable_count])


def describe(text: str, label: str = "") -> dict:
    data = text.encode("utf-8")
    return {"label": label, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "text": text}


def run_once(argv: list[str], hash_seed: str, label: str) -> dict:
    """One fresh interpreter printing `describe(...)` for argv; the run's label added."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()), env.get("PYTHONPATH")]))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{label}: exit {done.returncode}: {done.stderr[-2000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "label": label}


def compare(runs: list[dict]) -> bool:
    return len({r["sha256"] for r in runs}) == 1 and len({r["text"] for r in runs}) == 1


def check(data_dir: Path, user_name: str, at: datetime) -> dict:
    base = [sys.executable, "-m", "evals.cache.stability", "--data-dir", str(data_dir),
            "--user", user_name, "--at", at.isoformat()]
    runs = [run_once(base + ([] if seed is None else ["--shuffle-seed", str(seed)]),
                     hash_seed, label) for label, hash_seed, seed in RUNS]
    return {"user": user_name, "at": at.isoformat(), "identical": compare(runs),
            "runs": [{k: r[k] for k in ("label", "sha256", "bytes")} for r in runs]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--at", type=datetime.fromisoformat, required=True)
    parser.add_argument("--shuffle-seed", type=int)
    args = parser.parse_args(argv)
    text = stable_prefix(args.data_dir, args.user, args.at, args.shuffle_seed)
    print(json.dumps(describe(text), ensure_ascii=False))


if __name__ == "__main__":
    main()
