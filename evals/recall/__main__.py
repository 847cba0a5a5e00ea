"""python -m evals.recall --data FILE [--variants ...] [--modes ...] [--limit-samples N]"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

from chatsvc.testing import ScriptedUpstream
from evals._machine import describe
from evals.recall import mapping, report
from evals.recall.locomo import CATEGORIES, Problems, load
from evals.recall.runner import MODES, VARIANTS, Options, run_variant

DEFAULT_DATA = Path(__file__).parent / "data" / "chatsvc_recall.json"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals.recall", description=__doc__)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-format JSON (a list of samples)"
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=VARIANTS,
        default=list(VARIANTS),
        help="CHATSVC_RECALL_KEYS values; a fresh server each",
    )
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--limit-samples", type=int, default=None, help="only the first N samples")
    parser.add_argument(
        "--probe-messages",
        type=int,
        default=5000,
        help="messages another user imports during the chat probe (0: no probe)",
    )
    parser.add_argument(
        "--probe-variant",
        choices=VARIANTS,
        default=None,
        help="variant whose server runs the probe (default: the first)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=4_000_000,
        help="import body size per request (the server's limit is 8 MiB)",
    )
    parser.add_argument("--index-timeout", type=float, default=1800.0)
    parser.add_argument(
        "--rankings",
        type=Path,
        default=None,
        help="also write every answer's ranking to this file (JSON Lines: variant, mode, "
        "sample, question, category, evidence, [dia id, score, conversation id] best first), "
        "to try re-rankings offline",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="results file name under evals/results (default: recall for "
        "the bundled data, recall_<file stem> otherwise)",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    problems = Problems()
    samples = load(args.data, problems)[: args.limit_samples]
    sessions = [mapping.conversations(sample, problems) for sample in samples]
    probe_variant = args.probe_variant or args.variants[0]
    result = {"meta": _meta(args, samples), "variants": {}}
    rankings: list[dict] = []
    with ScriptedUpstream() as upstream:
        for variant in args.variants:
            print(f"variant {variant} ...", flush=True)
            found: list[dict] | None = [] if args.rankings else None
            options = Options(
                args.max_request_bytes,
                args.index_timeout,
                args.probe_messages if variant == probe_variant else 0,
                rankings=found,
            )
            result["variants"][variant] = run_variant(
                samples, sessions, variant, tuple(args.modes), options, upstream.base_url
            )
            rankings += [{"variant": variant, **row} for row in found or ()]
    if args.rankings:
        args.rankings.write_text("".join(json.dumps(row) + "\n" for row in rankings))
        print(f"wrote {args.rankings}")
    result["problems"] = problems.as_json()
    result["meta"]["seconds"] = round(time.monotonic() - started, 1)
    name = args.name or (
        "recall" if args.data.resolve() == DEFAULT_DATA.resolve() else f"recall_{args.data.stem}"
    )
    print(f"wrote {report.write(result, name)}")
    return 0


def _meta(args: argparse.Namespace, samples: list) -> dict:
    questions = Counter(CATEGORIES[q.category] for s in samples for q in s.questions)
    return {
        "data": args.data.name,
        "machine": describe(),
        "command": "python -m evals.recall " + shlex.join(sys.argv[1:]),
        "samples": len(samples),
        "turns": sum(s.turn_count for s in samples),
        "questions": dict(sorted(questions.items())),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
