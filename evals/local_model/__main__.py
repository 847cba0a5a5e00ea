"""python -m evals.local_model [--models a,b] [--ids id1,id2] [--max-tokens 160] [--n-ctx 8192]

Picks chatsvc's bundled local chat model by measurement (issue 19): each candidate in
evals/local_model/models.py answers the grounded questions of questions.json through a
real `chatsvc serve` (see runner.py), one model loaded at a time. Writes
evals/results/local_model.{json,md}; rows of models not rerun are kept from the
previous JSON (so candidates can be measured one command at a time).

Run it under `nice` on a shared machine; the load average at the start and end of each
model's run is recorded next to its figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

from evals.local_model.models import CANDIDATES
from evals.local_model.report import write_markdown
from evals.local_model.runner import run_candidate

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.local_model")
    parser.add_argument("--models", default=",".join(CANDIDATES),
                        help=f"comma-separated, from: {', '.join(CANDIDATES)}")
    parser.add_argument("--ids", default="", help="only these question ids (a smoke run)")
    parser.add_argument("--max-tokens", type=int, default=160,
                        help="LLM_MAX_TOKENS per answer (the local serve uses 512)")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "chatsvc-local-model-eval",
                        help="where chunked GGUFs are assembled")
    parser.add_argument("--out", type=Path, default=RESULTS / "local_model")
    parser.add_argument("--no-write", action="store_true", help="print only (smoke runs)")
    args = parser.parse_args(argv)

    dataset = json.loads((HERE / "questions.json").read_text())
    if args.ids:
        wanted = set(args.ids.split(","))
        dataset["questions"] = [q for q in dataset["questions"] if q["id"] in wanted]
    json_path = args.out.with_suffix(".json")
    previous = json.loads(json_path.read_text()) if json_path.exists() else {"models": []}
    rows = {row["model"]: row for row in previous.get("models", [])}

    for name in args.models.split(","):
        candidate = CANDIDATES[name]
        gguf = candidate.resolve(args.cache)
        print(f"{name}: {gguf} ({gguf.stat().st_size / 2**20:.0f} MiB), "
              f"loadavg {os.getloadavg()}", flush=True)
        row = run_candidate(candidate, gguf, dataset, n_ctx=args.n_ctx,
                            max_tokens=args.max_tokens, threads=args.threads,
                            log=lambda line: print(line, flush=True))
        row["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        row["max_tokens"] = args.max_tokens
        row["n_ctx"] = args.n_ctx
        row["threads"] = args.threads
        print(f"{name}: {row['hits']}/{row['n']} (en {row['hits_en']}/{row['n_en']}, "
              f"zh {row['hits_zh']}/{row['n_zh']}), ttft p50 {row['ttft_p50_s']} s, "
              f"decode {row['decode_tok_s_p50']} tok/s, rss {row['peak_rss_mib']} MiB, "
              f"loadavg {row['loadavg_start']} -> {row['loadavg_end']}", flush=True)
        if args.no_write:
            continue
        rows[name] = row
        order = [n for n in CANDIDATES if n in rows]
        result = {
            "about": "python -m evals.local_model: grounded EN/ZH questions through a real "
                     "chatsvc serve per candidate local model (issue 19)",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                       f"{platform.python_version()}",
            "questions": len(json.loads((HERE / 'questions.json').read_text())["questions"]),
            "models": [rows[n] for n in order],
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
        write_markdown(result, args.out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
