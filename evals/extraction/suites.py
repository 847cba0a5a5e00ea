"""The three measurements, each a list of per-conversation records (see metrics.py):
every conversation is imported for a fresh user through the HTTP API, extraction runs
until nothing is pending, and the stored facts are read back and matched."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from evals.extraction import answers
from evals.extraction.client import ExtractionClient
from evals.extraction.datasets import Adversarial, Locomo, load_adversarial
from evals.extraction.matcher import Matcher, about
from evals.extraction.service import Serving
from evals.recall import mapping
from evals.recall.locomo import Problems

SCRIPTED_SET = Path(__file__).parent / "scripted_conversations.jsonl"
Log = Callable[[str], None]


def _user(serving: Serving, name: str) -> ExtractionClient:
    return ExtractionClient(serving.service.url, serving.service.add_user(name))


def _extracted(client: ExtractionClient, batches: list[mapping.Batch]) -> tuple[dict, dict]:
    """Import `batches`, run extraction; (message id -> label map, extraction counts with
    `seconds`)."""
    ids: dict[str, str] = {}
    for batch in batches:
        ids.update(mapping.id_map(batch, client.import_batch(batch)))
    started = time.perf_counter()
    counts = client.extract_all()
    return ids, {**counts, "seconds": round(time.perf_counter() - started, 2)}


def _fact(raw: dict, ids: dict[str, str]) -> dict:
    evidence = raw.get("evidence")
    return {"fact": raw["fact"], "category": raw["category"], "evidence": evidence,
            "evidence_dia_ids": sorted({ids.get(e.get("message_id"), "?")
                                        for e in evidence or ()})}


def junk(serving: Serving, items: list[Adversarial], matcher: Matcher, log: Log,
         progress: Callable[[list[dict]], None] = lambda records: None) -> list[dict]:
    """Scripted: the upstream echoes every message as a fact (answers.echo_every_message).
    `progress` gets the records so far after each conversation (the bundled model takes
    minutes for one on a busy machine: a run cut short still leaves its figures)."""
    if serving.responder is not None:
        serving.responder.make = lambda shown, prompt: answers.echo_every_message(shown)
    records = []
    for n, item in enumerate(items):
        with _user(serving, f"junk-{n}") as client:
            ids, counts = _extracted(client, [item.batch()])
            facts = [_fact(f, ids) for f in client.facts()]
        found = matcher.matches([about(f["fact"]) for f in facts],
                                [about(s) for s in item.supported])
        for fact, supported_by in zip(facts, found, strict=True):
            fact["supported_by"] = supported_by
        records.append({"id": item.id, "lang": item.lang, "kind": item.kind,
                        "injection": item.is_injection, "supported": list(item.supported),
                        "messages": len(ids), "skipped_messages": item.skipped,
                        "extract": counts, "seconds": counts["seconds"], "facts": facts})
        junk_facts = sum(not f["supported_by"] for f in facts)
        log(f"  {item.id}: {len(facts)} facts, {junk_facts} junk ({counts['seconds']} s)")
        progress(records)
    return records


def locomo(serving: Serving, conversation: Locomo, matcher: Matcher, log: Log) -> dict:
    """speaker_a is the user; facts matched to both speakers' observations."""
    sample = conversation.sample
    user, other = sample.speaker_a, sample.speaker_b
    if serving.responder is not None:
        serving.responder.make = lambda shown, prompt: answers.echo_every_message(shown)
    problems = Problems()
    with _user(serving, f"locomo-{conversation.number}") as client:
        ids, counts = _extracted(client, conversation.batches(problems))
        facts = [_fact(f, ids) for f in client.facts()]
    mine, theirs = conversation.of(user), conversation.of(other)
    texts = [about(f["fact"], (user,)) for f in facts]
    speakers = frozenset({user.lower(), other.lower()})
    to_user = matcher.matches(texts, [about(o.text, (user,)) for o in mine], ignore=speakers)
    to_other = matcher.matches(texts, [about(o.text, (other,)) for o in theirs],
                               ignore=speakers)
    for fact, a, b in zip(facts, to_user, to_other, strict=True):
        # "Melanie has two kids" stored for Caroline is about a third party, as it should be.
        fact.update(matches_user=a, matches_other=b, names_other=other.lower() in
                    fact["fact"].lower())
    log(f"  conv-{conversation.number}: {len(ids)} messages, {len(facts)} facts "
        f"({counts['seconds']} s)")
    return {"conversation": conversation.number, "sessions": len(sample.sessions),
            "messages": len(ids), "user": user, "other": other, "extract": counts,
            "seconds": counts["seconds"], "facts": facts,
            "user_observations": [{"text": o.text, "dia_ids": sorted(o.dia_ids)} for o in mine],
            "other_observations": len(theirs), "problems": problems.as_json()}


def load_scripted(path: Path = SCRIPTED_SET) -> list[Adversarial]:
    return load_adversarial(path)


def scripted(serving: Serving, items: list[Adversarial], log: Log) -> list[dict]:
    """Every case of answers.CASES on every conversation, each for a fresh user."""
    records = []
    for item in items:
        for case in answers.CASES:
            def make(shown, prompt, case=case, lang=item.lang):
                return case.build(shown, lang, prompt)

            serving.responder.make, serving.responder.built = make, None
            with _user(serving, f"scripted-{item.id}-{case.name}") as client:
                ids, counts = _extracted(client, [item.batch()])
                facts = [_fact(f, ids) for f in client.facts()]
            records.append({"conversation": item.id, "lang": item.lang, "case": case.name,
                            "expected": case.expected, "expected_reason": case.reason,
                            "applicable": serving.responder.built is not None,
                            "answer": json.dumps(serving.responder.built, ensure_ascii=False),
                            "stored": len(facts), "rejected": counts["rejected"],
                            "extract": counts, "facts": facts})
        log(f"  {item.id}: {len(answers.CASES)} cases")
    return records
