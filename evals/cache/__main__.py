"""python -m evals.cache: replay the scenarios, predict provider caching, write the report.

    python -m evals.cache                       # scripted loopback upstream, all scenarios
    python -m evals.cache --upstream llama      # the local llama.cpp model, real TTFT
    python -m evals.cache --upstream https://api.moonshot.ai/v1 --model kimi-k2-0905-preview
                                                # a provider (key from LLM_API_KEY)
    python -m evals.cache --service-url http://127.0.0.1:8000 --token T --proxy-port 9911 \
        --layouts before_conversation --upstream https://api.moonshot.ai/v1
                                                # a running service whose LLM_BASE_URL is
                                                # http://127.0.0.1:9911/v1 (this proxy)
"""

from __future__ import annotations

import os

# One OpenMP thread for the in-process embedder: on a busy machine a thread pool that
# spins for cores it cannot get makes every embedding call seconds instead of ~0.1 s.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import logging
import shlex
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from evals import _machine as machine
from evals.cache import providers as rules
from evals.cache import report, runner, scenarios, stability, ttft
from evals.cache.metrics import summarise

RESULTS = Path(__file__).resolve().parent.parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evals.cache",
                                     description="Prompt-cache evaluation harness.")
    parser.add_argument("--upstream", default="scripted",
                        help="'scripted' (loopback, default), 'llama' (local llama.cpp) "
                             "or an OpenAI-compatible base URL")
    parser.add_argument("--model", default=os.environ.get("LLM_MODEL", "scripted-model"),
                        help="model name sent upstream (URL upstreams)")
    parser.add_argument("--layouts", default=",".join(runner.LAYOUTS),
                        help="comma-separated placement strategies to compare")
    parser.add_argument("--scenarios", nargs="*", default=None,
                        help="scenario id prefixes to keep (default: all)")
    parser.add_argument("--limit", type=int, help="at most this many scenarios")
    parser.add_argument("--max-turns", type=int, help="at most this many turns each")
    parser.add_argument("--max-tokens", type=int,
                        help="cap on generated tokens per turn (default 32 for llama)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--name", help="file name stem (default cache_<upstream kind>)")
    parser.add_argument("--models-dir", type=Path, default=Path("data/models"),
                        help="where the local GGUF is assembled (llama)")
    parser.add_argument("--tool-turns", action="store_true",
                        help="scripted upstream: every second turn first calls the "
                             "search_knowledge tool (conversations with tool turns)")
    parser.add_argument("--via", choices=("api", "v1"), default="api",
                        help="turns on /api/chat (default) or /v1/chat/completions, the "
                             "client sending the whole conversation")
    parser.add_argument("--no-stability", action="store_true",
                        help="skip the stable-prefix stability check")
    parser.add_argument("--service-url", help="replay through a running service instead")
    parser.add_argument("--token", help="bearer token of the user (with --service-url)")
    parser.add_argument("--proxy-port", type=int, default=9911,
                        help="port of the recording proxy the running service's "
                             "LLM_BASE_URL must point at (with --service-url)")
    args = parser.parse_args(argv)
    if args.service_url and not args.token:
        parser.error("--service-url needs --token")
    if args.via == "v1" and args.tool_turns:
        parser.error("--tool-turns runs server-side tools, which /v1 leaves to its client")
    args.kind = args.upstream if args.upstream in ("scripted", "llama") else "provider"
    if args.kind == "llama":
        args.limit = args.limit or 2
        args.max_turns = args.max_turns or 6
        args.max_tokens = args.max_tokens or 32
    args.name = args.name or f"cache_{'llamacpp' if args.kind == 'llama' else args.kind}"
    return args


def upstream_for(args: argparse.Namespace, stack: ExitStack) -> runner.Upstream:
    if args.kind == "scripted":
        from chatsvc.testing import ScriptedUpstream

        scripted = stack.enter_context(ScriptedUpstream())
        return runner.Upstream(scripted.base_url, "scripted-model", scripted=scripted)
    if args.kind == "llama":
        from chatsvc.local_models import GEMMA, LlamaServer

        # One thread: on a busy CPU, ggml's spinning worker threads make prefill crawl.
        server = stack.enter_context(LlamaServer(args.models_dir.resolve(), n_ctx=8192,
                                                 threads=1))
        # llama-cpp-python's gemma format drops system messages: fold them in first.
        return runner.Upstream(server.base_url, GEMMA.name, max_tokens=args.max_tokens,
                               fold_system=True)
    return runner.Upstream(args.upstream, args.model, api_key=os.environ.get("LLM_API_KEY"),
                           max_tokens=args.max_tokens)


def remote(replay: runner.Replay, args: argparse.Namespace, stack: ExitStack):
    import httpx

    proxy = stack.enter_context(runner.RecordingProxy(
        replay.upstream.base_url, api_key=replay.upstream.api_key,
        max_tokens=replay.upstream.max_tokens, port=args.proxy_port,
        fold_system_messages=replay.upstream.fold_system))
    print(f"recording proxy on {proxy.base_url}: the service's LLM_BASE_URL must be this",
          file=sys.stderr)
    client = stack.enter_context(httpx.Client(base_url=args.service_url, timeout=600))
    return runner.run_remote(replay, client, args.token, proxy)


def _settings_in_env() -> list[str]:
    """CHATSVC_* settings that change the prompts (budgets, say), shown in the report's
    command line; anything that may hold a secret is left out."""
    secret = {"URL", "TOKEN", "KEY", "PASSWORD", "SECRET"}
    return [f"{name}={value}" for name, value in sorted(os.environ.items())
            if name.startswith("CHATSVC_") and not secret & set(name.split("_"))]


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("evals.cache").setLevel(logging.INFO)
    args = parse_args(argv)
    providers = rules.load()
    chosen = scenarios.load(only=args.scenarios, limit=args.limit)
    layouts = tuple(args.layouts.split(","))
    started = time.perf_counter()
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evals-cache-")))
        upstream = upstream_for(args, stack)
        env = dict(os.environ)
        if args.kind == "llama":
            # A 270M model on a busy CPU is slow (streamed turns: to the first token).
            env.setdefault("LLM_TIMEOUT", "900")
            env.setdefault("LLM_FIRST_TOKEN_TIMEOUT", "900")
        replay = runner.Replay(chosen, layouts, providers, upstream, work, args.max_turns,
                               env=env, tool_turns=args.tool_turns, via=args.via,
                               after_layout=ttft.ColdProbe(upstream.base_url,
                                                           fold=upstream.fold_system)
                               if args.kind == "llama" else None)
        if args.service_url:
            rows, timings = remote(replay, args, stack)
        else:
            rows, timings = runner.run(replay)
        result = {
            "meta": {"command": shlex.join([*_settings_in_env(), "python", "-m",
                                            "evals.cache", *(argv or sys.argv[1:])]),
                     "upstream": args.upstream, "layouts": list(layouts),
                     "conversations": len(chosen), "turns": len(rows) // len(layouts),
                     "timings_s": timings, "seconds": time.perf_counter() - started,
                     "machine": machine.describe()},
            "summary": summarise(rows, providers),
            "turns": rows,
        }
        if args.kind == "llama":
            result["ttft"] = ttft.summarise(rows)
        if not args.no_stability and not args.service_url:
            first = chosen[0]
            result["stability"] = stability.check(work / layouts[0], first.user_name,
                                                  first.at(first.turns[-1]))
    for path in report.write(result, providers, args.out, args.name):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
