"""Time to first token on a real llama.cpp server, cached vs uncached prefix.

"As served" is what the proxy measured while the conversation ran: llama.cpp
reused whatever prefix it still had from the previous request. "Uncached" sends
the very same request bodies again after the layout's run, each with a unique
marker at the very start of the first message, so no prefix can be reused and
the whole prompt is processed: same model, same prompt length, no cache.
"""

from __future__ import annotations

import copy
import json
import time
from statistics import mean

import httpx

from chatsvc.llm import fold_system
from evals.cache.proxy import Exchange


def _first_token_seconds(base_url: str, body: dict, timeout: float = 600.0) -> float:
    started = time.perf_counter()
    with httpx.Client(timeout=timeout) as client, client.stream(
        "POST", f"{base_url.rstrip('/')}/chat/completions",
        json={**body, "stream": True, "max_tokens": 1},
    ) as answer:
        answer.raise_for_status()
        for line in answer.iter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            choices = json.loads(line[5:]).get("choices") or []
            if any((c.get("delta") or {}).get("content") or c.get("finish_reason")
                   for c in choices):
                return time.perf_counter() - started
    return time.perf_counter() - started


class ColdProbe:
    """`Replay.after_layout` hook: the uncached TTFT of every served turn from turn 2 on."""

    def __init__(self, base_url: str, *, fold: bool = False) -> None:
        self.base_url = base_url
        self.fold = fold  # send what the proxy sent: system folded into the first user turn
        self.count = 0

    def __call__(self, layout: str, pairs: list[tuple[dict, Exchange]]) -> None:
        for row, exchange in pairs:
            if row["turn"] < 2:
                continue
            self.count += 1
            body = copy.deepcopy(exchange.body)
            if self.fold:
                body["messages"] = fold_system(body["messages"])
            first = body["messages"][0]
            first["content"] = f"[uncached probe {self.count}] {first['content']}"
            row["ttft_uncached_seconds"] = _first_token_seconds(self.base_url, body)


def summarise(rows: list[dict]) -> dict:
    layouts = {}
    for layout in dict.fromkeys(r["layout"] for r in rows):
        probed = [r for r in rows if r["layout"] == layout
                  and r.get("ttft_uncached_seconds") is not None
                  and r.get("ttft_seconds") is not None]
        if not probed:
            continue
        layouts[layout] = {
            "turns": len(probed),
            "ttft_served_s": mean(r["ttft_seconds"] for r in probed),
            "ttft_uncached_s": mean(r["ttft_uncached_seconds"] for r in probed),
            "cached_tokens": mean(r["providers"]["llamacpp"]["cached"] for r in probed),
            "prompt_tokens": mean(r["prompt_tokens"] for r in probed),
        }
    note = ("Turns from 2 on. 'as served': measured at the recording proxy during the run; "
            "'uncached': the same request bodies replayed with a unique first token, so "
            "llama.cpp reuses no prefix. Cached tokens: the llama.cpp rule's prediction "
            "(cl100k tokens; Gemma's tokenizer counts differently).")
    return {"note": note, "layouts": layouts}
