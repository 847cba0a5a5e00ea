"""The relay part of `python -m evals.chat_bench`: what chatsvc adds per streamed chunk,
over HTTP (SSE through /api/chat against the same scripted stream read directly) and in
process (chatsvc's Relay on top of the official openai client alone)."""

from __future__ import annotations

import statistics
import time

import httpx

from chatsvc import Settings
from chatsvc.chat import Limits, Relay
from chatsvc.llm import LLM
from chatsvc.testing import Reply, ScriptedUpstream


def relay(base: str, headers: dict, upstream: ScriptedUpstream, n_chunks: int) -> dict:
    """Extra ms per chunk: /api/chat SSE vs reading the same scripted stream directly
    (both read line by line with httpx: the difference is what chatsvc adds)."""
    direct, via = [], []
    for _ in range(3):
        upstream.script(Reply(chunks=["tok "] * n_chunks))
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
        stamps = []
        with httpx.Client(timeout=60) as http, http.stream(
                "POST", f"{upstream.base_url}/chat/completions", json=body) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and '"content": "tok' in line:
                    stamps.append(time.perf_counter())
        direct.append(stamps[-1] - stamps[0])
        upstream.script(Reply(chunks=["tok "] * n_chunks))
        stamps = []
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http, http.stream(
                "POST", "/api/chat", json={"message": "relay"}) as response:
            for line in response.iter_lines():
                if line == "event: delta":
                    stamps.append(time.perf_counter())
        via.append(stamps[-1] - stamps[0])
    per_chunk = (statistics.median(via) - statistics.median(direct)) / (n_chunks - 1) * 1000
    return {"chunks": n_chunks, "direct_s": round(statistics.median(direct), 3),
            "via_chatsvc_s": round(statistics.median(via), 3),
            "overhead_per_chunk_ms": round(per_chunk, 4)}


async def relay_in_process(upstream: ScriptedUpstream, settings: Settings, n: int) -> dict:
    """Per-chunk ms of the official openai client alone vs chatsvc's Relay on top of it."""
    import openai

    async def per_chunk(events) -> float:
        stamps = []
        async for event in events:  # the Relay yields lists of what arrived together
            stamps += [time.perf_counter()] * (len(event) if isinstance(event, list) else 1)
        return (stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1000

    async def openai_deltas(client):
        stream = await client.chat.completions.create(
            model="m", stream=True, messages=[{"role": "user", "content": "x"}])
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk

    llm = LLM(settings)
    raw, relayed = [], []
    async with openai.AsyncOpenAI(base_url=upstream.base_url, api_key="x") as client:
        for _ in range(3):
            upstream.script(Reply(chunks=["tok "] * n))
            raw.append(await per_chunk(openai_deltas(client)))
            upstream.script(Reply(chunks=["tok "] * n))
            relay = Relay(llm, [{"role": "user", "content": "x"}], limits=Limits(60, 60))
            relayed.append(await per_chunk(relay.events()))
    await llm.aclose()
    return {"openai_client_ms_per_chunk": round(statistics.median(raw), 4),
            "relay_ms_per_chunk": round(statistics.median(relayed), 4)}
