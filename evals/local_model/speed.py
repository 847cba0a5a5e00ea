"""python -m evals.local_model.speed [--models a,b] [--rounds 2]

Speed of each candidate under the same conditions, back to back: the main run takes
tens of minutes per model on a shared machine whose load changes meanwhile, so its
TTFT and tokens/s are not comparable across models. Here every model, loaded alone,
gets the same requests straight on its llama.cpp server, `rounds` times: a ~1000-token
prompt (prefill; a nonce in front defeats the prefix cache) and a 128-token answer
(decode). Figures are llama.cpp's own timings; results are added to
evals/results/local_model.json (`speed_runs` of each model) and the .md is rewritten.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from evals.local_model.models import CANDIDATES
from evals.local_model.report import write_markdown
from evals.local_model.runner import LlamaProcess

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results" / "local_model.json"


def prompt_text() -> str:
    dataset = json.loads((HERE / "questions.json").read_text())
    docs = [d["content"] for q in dataset["questions"] for d in q.get("documents", [])
            if q["lang"] == "en"]
    return "\n\n".join(dict.fromkeys(docs)) * 3  # about 1000 tokens


def measure(candidate, gguf: Path, rounds: int, threads: int) -> dict:
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        llama = LlamaProcess(gguf, candidate, n_ctx=8192, threads=threads,
                             log_path=Path(tmp) / "llama.log")
        try:
            ttfts = []
            for _ in range(rounds):
                messages = [
                    {"role": "system", "content": f"[{uuid.uuid4()}] You are a helpful assistant."},
                    {"role": "user", "content": prompt_text() + "\n\nSummarise these notes "
                     "in detail, one long paragraph per note."},
                ]
                if candidate.system_role == "fold":
                    messages = [{"role": "user", "content": messages[0]["content"] + "\n\n"
                                 + messages[1]["content"]}]
                started = time.perf_counter()
                first = None
                with httpx.stream("POST", f"{llama.base_url}/chat/completions", timeout=600,
                                  json={"model": candidate.name, "messages": messages,
                                        "max_tokens": 128, "stream": True}) as response:
                    for line in response.iter_lines():
                        if first is None and line.startswith("data:") and '"content"' in line:
                            first = time.perf_counter() - started
                ttfts.append(first)
            timings = llama.timings()
            rss = llama.peak_rss_mib()
        finally:
            llama.stop()
    load_end = os.getloadavg()
    return {
        "prompt_tokens": timings[0]["prompt_tokens"],
        "prefill_tok_s": round(statistics.median(
            t["prompt_tokens"] / t["prompt_ms"] * 1000 for t in timings), 1),
        "decode_tok_s": round(statistics.median(
            t["eval_tokens"] / t["eval_ms"] * 1000 for t in timings if t["eval_ms"]), 1),
        "answer_tokens": [t["eval_tokens"] for t in timings],
        "ttft_s": round(statistics.median(t for t in ttfts if t is not None), 2),
        "peak_rss_mib": round(rss, 1), "rounds": rounds, "threads": threads,
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in load_end],
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.local_model.speed")
    parser.add_argument("--models", default=",".join(CANDIDATES))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "chatsvc-local-model-eval")
    args = parser.parse_args()
    result = json.loads(RESULTS.read_text())
    rows = {m["model"]: m for m in result["models"]}
    # One number per invocation ("pass"), shared by the models it measured.
    run = 1 + max((sp["run"] for m in rows.values() for sp in m.get("speed_runs", [])),
                  default=0)
    for name in args.models.split(","):
        candidate = CANDIDATES[name]
        speed = measure(candidate, candidate.resolve(args.cache), args.rounds, args.threads)
        print(name, speed, flush=True)
        if name in rows:  # every run is kept: the machine's load varies between runs
            rows[name].setdefault("speed_runs", []).append({**speed, "run": run})
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    write_markdown(result, RESULTS.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
