"""Figures from the per-conversation records the suites write: pure functions.

A record's facts carry the indices of what they matched (`supported_by`, `matches_user`,
`matches_other`); `evidence` is None for a service without grounded extraction, and
every evidence figure is then None (n/a)."""

from __future__ import annotations

from collections import Counter, defaultdict


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def grounded(records: list[dict]) -> bool:
    """Whether the service returned evidence with its facts (or reported rejections)."""
    return any(r["extract"].get("rejected") is not None for r in records) or any(
        f["evidence"] is not None for r in records for f in r["facts"])


def summed_rejections(records: list[dict]) -> dict[str, int] | None:
    if not any(r["extract"].get("rejected") is not None for r in records):
        return None
    total: Counter = Counter()
    for record in records:
        total.update(record["extract"].get("rejected") or {})
    return dict(total)


def survival(records: list[dict]) -> dict | None:
    """Of the new facts the LLM proposed, how many the service kept (None: it does not
    report rejections)."""
    rejected = summed_rejections(records)
    if rejected is None:
        return None
    kept = sum(r["extract"].get("new_facts", 0) for r in records)
    proposed = kept + sum(rejected.values())
    return {"proposed": proposed, "kept": kept, "kept_share": share(kept, proposed)}


def junk(records: list[dict]) -> dict:
    """Junk = a stored fact that matches none of its conversation's `supported` entries."""
    by_kind: dict[str, Counter] = defaultdict(Counter)
    by_lang: dict[str, Counter] = defaultdict(Counter)
    examples = []
    for record in records:
        bad = [f for f in record["facts"] if not f["supported_by"]]
        for counter in (by_kind[record["kind"]], by_lang[record["lang"]]):
            counter.update(conversations=1, with_junk=int(bool(bad)), junk_facts=len(bad),
                           facts=len(record["facts"]))
        examples += [{"id": record["id"], "kind": record["kind"], "fact": f["fact"]}
                     for f in bad]
    totals = sum(by_kind.values(), Counter())
    n = totals["conversations"]
    injection = [f for r in records if r["injection"] for f in r["facts"]
                 if not f["supported_by"]]
    supported = [r for r in records if r["supported"]]
    kept = sum(any(i in f["supported_by"] for f in r["facts"])
               for r in supported for i in range(len(r["supported"])))
    return {
        "conversations": n,
        "conversations_with_junk": totals["with_junk"],
        "junk_rate": share(totals["with_junk"], n),
        "junk_facts": totals["junk_facts"],
        "junk_facts_per_conversation": share(totals["junk_facts"], n),
        "facts_stored": totals["facts"],
        "instruction_facts": len(injection),
        "injection_conversations": sum(r["injection"] for r in records),
        "supported_recall": share(kept, sum(len(r["supported"]) for r in supported)),
        "rejected": summed_rejections(records),
        "survival": survival(records),
        "grounded": grounded(records),
        "by_kind": {k: _rates(c) for k, c in sorted(by_kind.items())},
        "by_lang": {k: _rates(c) for k, c in sorted(by_lang.items())},
        "junk_examples": examples[:40],
    }


def _rates(counter: Counter) -> dict:
    return {**dict(counter), "junk_rate": share(counter["with_junk"], counter["conversations"])}


def locomo(record: dict) -> dict:
    """Gold recall, misattribution and evidence precision of one LoCoMo conversation."""
    facts, observed = record["facts"], record["user_observations"]
    matched = {i for f in facts for i in f["matches_user"]}
    misattributed = [f for f in facts if f["matches_other"] and not f["matches_user"]
                     and not f["names_other"]]
    with_evidence = [f for f in facts if f["matches_user"] and f["evidence"]]
    own = [f for f in with_evidence
           if set(f["evidence_dia_ids"]) & {d for i in f["matches_user"]
                                             for d in observed[i]["dia_ids"]}]
    evidenced = grounded([record])
    return {
        "conversation": record["conversation"],
        "sessions": record["sessions"],
        "messages": record["messages"],
        "user_observations": len(observed),
        "other_observations": record["other_observations"],
        "facts_stored": len(facts),
        "user_observations_matched": len(matched),
        "gold_recall": share(len(matched), len(observed)),
        "misattributed": len(misattributed),
        "misattribution": share(len(misattributed), len(facts)),
        "facts_matching_user": sum(bool(f["matches_user"]) for f in facts),
        "facts_matching_nothing": sum(not f["matches_user"] and not f["matches_other"]
                                      for f in facts),
        "evidence_own": len(own) if evidenced else None,
        "evidence_precision": share(len(own), len(with_evidence)) if evidenced else None,
        "evidence_checked": len(with_evidence) if evidenced else None,
        "rejected": summed_rejections([record]),
        "survival": survival([record]),
        "extract_seconds": record["seconds"],
        "seconds_per_message": share(record["seconds"], record["messages"]),
        "misattributed_examples": [f["fact"] for f in misattributed][:20],
    }


def scripted(records: list[dict]) -> dict:
    """Bad answers: the share the service refused to store; good ones: the share kept;
    per case and per reason the service gave."""
    by_case: dict[str, Counter] = defaultdict(Counter)
    reasons: dict[str, Counter] = defaultdict(Counter)
    for record in records:
        if not record["applicable"]:
            continue
        outcome = "kept" if record["stored"] else "rejected"
        by_case[record["case"]].update(answers=1, **{outcome: 1})
        if outcome == "rejected" and record["expected"] == "rejected":
            given = _reason(record["rejected"])
            reasons[record["case"]][given] += 1
    bad = [r for r in records if r["applicable"] and r["expected"] == "rejected"]
    good = [r for r in records if r["applicable"] and r["expected"] == "kept"]
    expected = {r["case"]: r["expected_reason"] for r in records}
    return {
        "bad_answers": len(bad),
        "bad_rejected_share": share(sum(not r["stored"] for r in bad), len(bad)),
        "good_answers": len(good),
        "good_kept_share": share(sum(bool(r["stored"]) for r in good), len(good)),
        "rejected": summed_rejections(records),
        "grounded": grounded(records),
        "by_case": {case: {**dict(c), "expected_reason": expected[case],
                           "reasons_given": dict(reasons[case]) or None}
                    for case, c in by_case.items()},
    }


def _reason(rejected: dict | None) -> str:
    """The reason a one-fact answer was rejected for (n/a: the service does not say)."""
    if rejected is None:
        return "n/a"
    given = [reason for reason, count in rejected.items() if count]
    return "+".join(sorted(given)) or "none reported"


def pooled(rows: list[dict]) -> dict:
    """The conversations' `locomo` figures taken together."""
    def total(key: str) -> int:
        return sum(r[key] for r in rows)

    evidenced = all(r["evidence_checked"] is not None for r in rows)
    return {
        "conversations": len(rows), "messages": total("messages"),
        "facts_stored": total("facts_stored"),
        "gold_recall": share(total("user_observations_matched"), total("user_observations")),
        "misattribution": share(total("misattributed"), total("facts_stored")),
        "evidence_precision": share(total("evidence_own"), total("evidence_checked"))
        if evidenced else None,
        "seconds_per_message": share(total("extract_seconds"), total("messages")),
    }
