"""python -m evals.recall --data FILE [--variants ...] [--modes ...] [--limit-samples N]

FILE: LoCoMo-format JSON, or LongMemEval (`longmemeval_s*.json[.gz]`,
`longmemeval_oracle.json`; `--questions`, `--types`), told apart by their keys."""

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
from evals.recall import longmemeval, mapping, report
from evals.recall.locomo import CATEGORIES, Problems, samples_of
from evals.recall.runner import MODES, VARIANTS, Options, run_variant

DEFAULT_DATA = Path(__file__).parent / "data" / "chatsvc_recall.json"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals.recall", description=__doc__)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA,
        help="LoCoMo-format JSON (a list of samples) or LongMemEval JSON (.gz too)",
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
        "--questions", type=int, default=None,
        help="LongMemEval: only N questions, taken in turn from each type",
    )
    parser.add_argument(
        "--types", nargs="+", choices=longmemeval.TYPES, default=None,
        help="LongMemEval: only questions of these types",
    )
    parser.add_argument(
        "--haystack-sessions", type=int, default=None, metavar="K",
        help="LongMemEval: each haystack cut to its answer sessions and K others (a quick "
        "run on a smaller haystack, not the benchmark's figures)",
    )
    parser.add_argument(
        "--include-heldout", action="store_true",
        help="also the acceptance set: LongMemEval's held-out questions, LoCoMo's conversations "
        "44 and 47-50 (for the outside check only)",
    )
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
        "--server-env", nargs="+", default=[], metavar="NAME=VALUE",
        help="more settings for the server, e.g. CHATSVC_EMBED_PRIORITY=off (the indexer "
        "then embeds at normal CPU priority: on a machine others load, its lowest one "
        "leaves it waiting)",
    )
    parser.add_argument(
        "--asked-now", action="store_true",
        help="ask every question at the server's now instead of at the end of its "
        "conversation (LongMemEval: its question_date): no time preference",
    )
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
    raw = longmemeval.read_json(args.data)
    if longmemeval.is_longmemeval(raw):
        samples = longmemeval.select(raw, problems, types=args.types, questions=args.questions,
                                     include_heldout=args.include_heldout,
                                     others=args.haystack_sessions)
        sessions = [haystack.sessions for haystack in samples]
        args.probe_messages = 0  # the probe chats with LoCoMo questions
        meta = _haystack_meta(args, samples)
    else:
        samples = samples_of(raw, problems, include_heldout=args.include_heldout)[
            : args.limit_samples]
        sessions = [mapping.conversations(sample, problems) for sample in samples]
        meta = _meta(args, samples)
    probe_variant = args.probe_variant or args.variants[0]
    result = {"meta": meta, "variants": {}}
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
                server_env=tuple(_setting(item) for item in args.server_env),
                asked_at_end=not args.asked_now,
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
    result["meta"]["machine"] = describe()  # its load average now too, at the end
    name = args.name or (
        "recall" if args.data.resolve() == DEFAULT_DATA.resolve()
        else f"recall_{args.data.name.split('.')[0]}"
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


def _setting(item: str) -> tuple[str, str]:
    name, equals, value = item.partition("=")
    if not equals or not name:
        raise SystemExit(f"--server-env wants NAME=VALUE, not {item!r}")
    return name, value


def _haystack_meta(args: argparse.Namespace, haystacks: list) -> dict:
    return {
        "format": "longmemeval",
        "data": args.data.name,
        "machine": describe(),
        "command": "python -m evals.recall " + shlex.join(sys.argv[1:]),
        "samples": len(haystacks),
        "turns": sum(h.turn_count for h in haystacks),
        "questions": dict(sorted(Counter(h.question_type for h in haystacks).items())),
        "question_ids": [h.question_id for h in haystacks],
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
