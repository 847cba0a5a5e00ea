"""Prometheus metrics: how turns went and what they cost, scraped at `GET /metrics`.

Recorded at a few points (the end of a relayed answer, a fallback, a breaker opening
or closing) and read at scrape time. Under `chatsvc serve --workers N`, serve sets
PROMETHEUS_MULTIPROC_DIR before the workers start: each worker writes its values to
files there and a scrape, answered by any one worker, adds up every worker's.
The metric names are listed in docs/operations.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The text format every Prometheus reads (the web framework adds the charset).
CONTENT_TYPE = "text/plain; version=0.0.4"

TURNS = Counter(
    "chatsvc_turns", "Chat turns (/api/chat and /v1) by retrieval mode and how they ended",
    ["mode", "status"],
)
TIME_TO_FIRST_TOKEN = Histogram(
    "chatsvc_time_to_first_token_seconds",
    "Request taken -> first answer token relayed (turns that produced one)",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
OVERHEAD = Histogram(
    "chatsvc_turn_overhead_seconds",
    "Request taken -> upstream call started: chatsvc's own share of a turn (saving the "
    "question, retrieval including the query embedding, prompt assembly)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
TOKENS = Counter(
    "chatsvc_tokens",
    "Tokens by model and kind: prompt, cached (prompt tokens the upstream served from its "
    "cache, as it reported them) and completion",
    ["model", "kind"],
)
CACHE_HIT_RATIO = Histogram(
    "chatsvc_prompt_cache_hit_ratio",
    "Per turn: cached / prompt tokens (turns whose upstream reported cached tokens)",
    ["model"], buckets=(0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1),
)
FALLBACKS = Counter(
    "chatsvc_fallbacks", "Turns answered from recent posts because retrieval failed",
    ["cause"],
)
BREAKER = Counter(
    "chatsvc_breaker_transitions", "Circuit breaker openings and closings", ["breaker", "state"],
)
FACTS_STORED = Counter(
    "chatsvc_facts_extracted", "Verified facts fact extraction stored (new rows), by category",
    ["category"],
)
FACTS_REJECTED = Counter(
    "chatsvc_facts_rejected",
    "Facts the LLM proposed that verification refused, by reason (no_evidence, not_user, "
    "quote_not_found, unsupported, not_a_statement)",
    ["reason"],
)
FEEDBACK = Counter(
    "chatsvc_feedback", "Feedback given on answers (PUT /api/messages/{id}/feedback), by rating",
    ["rating"],
)
ACTIVE_STREAMS = Gauge(
    "chatsvc_active_streams", "Upstream answers being relayed right now",
    multiprocess_mode="livesum",
)
EMBEDDING_WAITING = Gauge(
    "chatsvc_embedding_queue_depth", "Rows waiting for an embedding, by vector index",
    ["index"], multiprocess_mode="livemostrecent",
)


def stream_started() -> None:
    ACTIVE_STREAMS.inc()


def turn_finished(relay) -> None:
    """One relayed answer ended (a `chatsvc.chat.Relay`: its outcome and timestamps)."""
    ACTIVE_STREAMS.dec()
    outcome = relay.outcome
    status = (outcome.error_code or outcome.status) if outcome else "error"
    TURNS.labels(relay.mode, status).inc()
    if relay.received_at is not None and relay.started_at is not None:
        OVERHEAD.observe(relay.started_at - relay.received_at)
    if relay.first_token_at is not None:
        since = relay.received_at if relay.received_at is not None else relay.started_at
        TIME_TO_FIRST_TOKEN.observe(relay.first_token_at - since)
    if outcome is not None and outcome.usage is not None:
        count_tokens(relay.model or relay.llm.model, outcome.usage)


def count_tokens(model: str, usage) -> None:
    """A `chatsvc.llm.Usage`'s tokens; cached ones and the hit ratio only when reported."""
    prompt = usage.prompt_tokens or 0
    TOKENS.labels(model, "prompt").inc(prompt)
    TOKENS.labels(model, "completion").inc(usage.completion_tokens or 0)
    if usage.cached_tokens is not None:
        TOKENS.labels(model, "cached").inc(usage.cached_tokens)
        if prompt:
            CACHE_HIT_RATIO.labels(model).observe(usage.cached_tokens / prompt)


def feedback(rating: str) -> None:
    FEEDBACK.labels(rating).inc()


def fallback(cause: str) -> None:
    FALLBACKS.labels(cause).inc()


def breaker_changed(name: str, state: str) -> None:
    BREAKER.labels(name, state).inc()


def set_embedding_waiting(index: str, waiting: int) -> None:
    """For the background indexer: rows of `index` (a `chatsvc.reindex.REINDEXABLE` name)
    still waiting for a vector, in the whole store (the latest report of any worker wins).
    Not counted at scrape time: `pending_count()` scans its whole table (640 ms for 10k
    facts on the 2-core test machine)."""
    EMBEDDING_WAITING.labels(index).set(waiting)


# -- scraping -----------------------------------------------------------------------

_LIVE_FILE = re.compile(r"gauge_live\w+_(\d+)\.db$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _forget_dead_workers(path: str) -> None:
    """A worker that died (and was replaced) leaves its live gauges behind: drop them, or
    its streams would count as active for ever."""
    for file in Path(path).glob("gauge_live*.db"):
        match = _LIVE_FILE.search(file.name)
        if match and not _alive(int(match.group(1))):
            multiprocess.mark_process_dead(int(match.group(1)), path)


def exposition() -> bytes:
    """The text format of every metric: this process's, or every worker's together."""
    path = os.environ.get(MULTIPROC_ENV)
    if not path:
        return generate_latest(REGISTRY)
    _forget_dead_workers(path)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path)
    return generate_latest(registry)


def fresh_multiproc_dir(path: Path) -> Path:
    """An empty directory for the workers' metric files (old ones would be summed in)."""
    path.mkdir(parents=True, exist_ok=True)
    for file in path.glob("*.db"):
        file.unlink()
    return path
