"""python -m evals.extraction [--llm local|scripted] [--suites junk locomo scripted] ...

Extraction quality through the HTTP API of a real `chatsvc serve`: junk on the
adversarial set, gold recall on LoCoMo (`--locomo ZIP`), and with the scripted upstream
the share of bad answers refused. Figures go to evals/results/extraction_quality.{json,md}
under `--label` (before / after)."""

from __future__ import annotations

import argparse
import hashlib
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from chatsvc.local_models import CHAT_MODELS, QWEN
from evals._machine import describe
from evals.extraction import metrics, results, suites
from evals.extraction.datasets import load_adversarial, load_locomo
from evals.extraction.matcher import Matcher
from evals.extraction.service import serving
from evals.recall.locomo import Problems

ADVERSARIAL = Path(__file__).parent / "adversarial.jsonl"
SUITES = ("junk", "locomo", "scripted")
REPO = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals.extraction", description=__doc__)
    parser.add_argument("--llm", choices=("local", "scripted"), default="local")
    parser.add_argument("--model", choices=sorted(CHAT_MODELS), default=QWEN.name,
                        help="the bundled model (--llm local)")
    parser.add_argument("--suites", nargs="+", choices=SUITES, default=None,
                        help="default: junk, locomo with --locomo, scripted with --llm scripted")
    parser.add_argument("--adversarial", type=Path, default=ADVERSARIAL)
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first N adversarial conversations")
    parser.add_argument("--per-kind", type=int, default=None,
                        help="only the first N adversarial conversations of each kind and language")
    parser.add_argument("--locomo", type=Path, default=None, help="locomo10.zip")
    parser.add_argument("--conversations", type=int, nargs="+", default=[26, 30])
    parser.add_argument("--sessions", type=int, default=None,
                        help="only each LoCoMo conversation's first N sessions")
    parser.add_argument("--acceptance", action="store_true",
                        help="allow the LoCoMo conversations kept for acceptance")
    parser.add_argument("--label", default="after", help="where the figures go: before, after")
    parser.add_argument("--models-dir", type=Path, default=Path("data/models"),
                        help="where the bundled model's GGUF is assembled once")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    parser.add_argument("--out", type=Path, default=results.RESULTS)
    parser.add_argument("--service-root", type=Path, default=REPO,
                        help="the checkout whose `chatsvc serve` is measured (default: this one)")
    args = parser.parse_args(argv)
    if args.suites is None:
        args.suites = ["junk", *(["locomo"] if args.locomo else []),
                       *(["scripted"] if args.llm == "scripted" else [])]
    if "scripted" in args.suites and args.llm != "scripted":
        parser.error("the scripted suite needs --llm scripted")
    if "locomo" in args.suites and args.locomo is None:
        parser.error("the locomo suite needs --locomo PATH (locomo10.zip)")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    matcher = Matcher()
    with serving(args.llm, model=args.model, models_dir=args.models_dir.resolve(),
                 threads=args.threads, root=args.service_root.resolve()) as served:
        llm = "scripted" if args.llm == "scripted" else f"local {served.model}"
        for suite in args.suites:
            print(f"{suite} ({llm}) ...", flush=True)
            save = _saver(args, served, matcher, llm, suite)
            figures, records = _run(suite, args, served, matcher, save)
            print(f"wrote {save(figures, records, complete=True)}")
    return 0


def _saver(args: argparse.Namespace, served, matcher: Matcher, llm: str,
           suite: str) -> Callable:
    """save(figures, records, complete=...): one suite's figures with their meta, written;
    `complete` False for the figures so far of a run still going."""
    started = time.monotonic()

    def save(figures: dict, records: list, *, complete: bool) -> Path:
        figures["meta"] = {**_meta(args, served.model, matcher, time.monotonic() - started),
                           "complete": complete, "server_crashes": served.service.crashes()}
        return results.save(args.label, llm, suite, figures, records, out=args.out)

    return save


def _run(suite: str, args: argparse.Namespace, served, matcher: Matcher,
         save: Callable) -> tuple[dict, list]:
    if suite == "junk":
        items = _chosen(load_adversarial(args.adversarial), args)

        def junk_figures(records: list[dict]) -> dict:
            return {**metrics.junk(records), "data": _data(args.adversarial)}

        records = suites.junk(served, items, matcher, print, progress=lambda records: save(
            junk_figures(records), records, complete=False))
        return junk_figures(records), records
    if suite == "scripted":
        records = suites.scripted(served, suites.load_scripted(), print)
        return metrics.scripted(records), records
    problems = Problems()
    records = [suites.locomo(served, load_locomo(args.locomo, n, problems,
                                                 sessions=args.sessions,
                                                 acceptance=args.acceptance), matcher, print)
               for n in args.conversations]
    rows = [metrics.locomo(r) for r in records]
    return {"conversations": rows, "overall": metrics.pooled(rows),
            "problems": problems.as_json()}, records


def _chosen(items: list, args: argparse.Namespace) -> list:
    if args.per_kind is not None:
        seen: Counter = Counter()
        items = [i for i in items
                 if (seen.update([(i.kind, i.lang)]) or seen[i.kind, i.lang]) <= args.per_kind]
    return items[: args.limit]


def _data(path: Path) -> dict:
    """Which set was run: before and after figures must come from the same file."""
    return {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]}


def _meta(args: argparse.Namespace, model: str, matcher: Matcher, seconds: float) -> dict:
    return {
        "commit": _commit(args.service_root),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "model": model, "matcher": matcher.rule.describe(),
        "load": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "machine": describe(), "seconds": round(seconds, 1),
        "command": "python -m evals.extraction " + shlex.join(sys.argv[1:]),
    }


def _commit(root: Path) -> str:
    """The measured checkout's commit (the service's code; the harness is this one's)."""
    def git(*command: str) -> str:
        return subprocess.run(["git", *command], cwd=root, capture_output=True,
                              text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                ":!evals/results")  # the figures being written are not the code measured
    return git("rev-parse", "--short", "HEAD") + (" (uncommitted changes)" if dirty else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
