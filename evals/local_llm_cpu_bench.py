"""python -m evals.local_llm_cpu_bench [--models gemma-3-270m,qwen2.5-coder-1.5b-instruct]
                                     [--rounds 3] [--threads 1] [--cache DIR]

What the safe CPU path (CHATSVC_LOCAL_LLM_CPU=safe: no weight repacking) costs against
the fast one, per bundled model, on this machine. Both servers of a model run at once
(chatsvc.local_models.LlamaServer, as `serve` starts them) and take turns, request by
request, so a load that changes during the run hits both alike: a ~300-token prompt (a
nonce in front defeats the prefix cache) and a 32-token answer. Figures are llama.cpp's
own timings (prefill and decode tokens/s, medians over the rounds). One thread by
default: on a shared machine whose load is above its core count, ggml's spinning
worker threads made decode crawl (0.3-0.4 tok/s for Gemma 270M with 2 threads at a
load of 30), which measures the contention, not the kernels. Writes
evals/results/local_llm_cpu.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import uuid
from contextlib import ExitStack
from pathlib import Path

import httpx

from chatsvc.local_models import CHAT_MODELS, LlamaServer
from evals._machine import describe
from evals.local_model.runner import llama_timings

RESULTS = Path(__file__).resolve().parent / "results" / "local_llm_cpu.json"
MODES = ("fast", "safe")
ANSWER_TOKENS = 32
PROMPT = ("Notes: the lighthouse keeper logs the weather every four hours, trims the "
          "wick at dusk, and writes to his sister in Lyon each Sunday. ") * 8


def server_dir(cache: Path, model, mode: str) -> Path:
    """A directory per server (each keeps its log and state there by the model's name),
    the model file assembled once and linked into each."""
    gguf = model.gguf(cache)
    directory = cache / mode
    directory.mkdir(exist_ok=True)
    if not (directory / gguf.name).exists():
        (directory / gguf.name).symlink_to(gguf)
    return directory


def one_request(server: LlamaServer) -> dict:
    """One uncached completion; llama.cpp's timings of it, from the server's log."""
    before = len(llama_timings(server.log_path))
    content = f"[{uuid.uuid4()}] {PROMPT}\nRetell these notes as a short story."
    response = httpx.post(f"{server.base_url}/chat/completions", timeout=600, json={
        "model": server.model.name, "max_tokens": ANSWER_TOKENS, "temperature": 0,
        "messages": [{"role": "user", "content": content}]})
    response.raise_for_status()
    return llama_timings(server.log_path)[before]


def measure(model_name: str, rounds: int, threads: int, cache: Path) -> dict:
    load_start = os.getloadavg()
    model = CHAT_MODELS[model_name]
    with ExitStack() as stack:
        servers = {mode: stack.enter_context(LlamaServer(
            server_dir(cache, model, mode), model=model, n_ctx=4096, threads=threads,
            cpu=mode))
            for mode in MODES}
        runs = {mode: [] for mode in MODES}
        for _ in range(rounds):
            for mode, server in servers.items():
                runs[mode].append(one_request(server))
    result = {"model": model_name, "rounds": rounds, "threads": servers["fast"].threads,
              "loadavg_start": [round(x, 2) for x in load_start],
              "loadavg_end": [round(x, 2) for x in os.getloadavg()]}
    for mode, timings in runs.items():
        result[mode] = {
            "prompt_tokens": timings[0]["prompt_tokens"],
            "prefill_tok_s": round(statistics.median(
                t["prompt_tokens"] / t["prompt_ms"] * 1000 for t in timings), 1),
            "decode_tok_s": round(statistics.median(
                t["eval_tokens"] / t["eval_ms"] * 1000 for t in timings), 1)}
    return result


def markdown(results: list[dict], machine: str) -> str:
    lines = ["# The bundled model's CPU paths: fast (repacked weights) vs safe",
             "", f"`python -m evals.local_llm_cpu_bench`; {machine}.", "",
             "| model | path | prefill tok/s | decode tok/s | load average (start → end) |",
             "|---|---|---|---|---|"]
    for row in results:
        load = f"{row['loadavg_start'][0]} → {row['loadavg_end'][0]}"
        for mode in MODES:
            figures = row[mode]
            lines.append(f"| {row['model']} | {mode} | {figures['prefill_tok_s']} | "
                         f"{figures['decode_tok_s']} | {load} |")
    lines += ["", f"Medians of {results[0]['rounds']} requests per path, the two paths "
              "taking turns; prompts of "
              f"{results[0]['fast']['prompt_tokens']} tokens, {ANSWER_TOKENS}-token answers, "
              f"{results[0]['threads']} threads."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.local_llm_cpu_bench")
    parser.add_argument("--models", default=",".join(reversed(CHAT_MODELS)))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "chatsvc-local-llm-cpu")
    args = parser.parse_args()
    results = [measure(name, args.rounds, args.threads, args.cache)
               for name in args.models.split(",")]
    machine = describe()
    RESULTS.write_text(json.dumps({"machine": machine, "results": results}, indent=1) + "\n")
    RESULTS.with_suffix(".md").write_text(markdown(results, machine))
    print(RESULTS.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
