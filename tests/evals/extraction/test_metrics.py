"""Figures from records: what a grounded service's evidence adds, and n/a without it."""

from evals.extraction import metrics


def _fact(text, user=(), other=(), dia=(), evidence=True, names_other=False):
    return {"fact": text, "matches_user": list(user), "matches_other": list(other),
            "names_other": names_other, "evidence_dia_ids": list(dia),
            "evidence": [{"message_id": d} for d in dia] if evidence else None}


def _record(facts, rejected):
    return {"conversation": 26, "sessions": 1, "messages": 10, "seconds": 5.0,
            "other_observations": 3, "facts": facts,
            "extract": {"new_facts": len(facts), "rejected": rejected},
            "user_observations": [{"text": "a", "dia_ids": ["D1:1"]},
                                  {"text": "b", "dia_ids": ["D1:3"]},
                                  {"text": "c", "dia_ids": ["D1:5"]}]}


def test_locomo_figures_with_evidence():
    facts = [_fact("own evidence", user=[0], dia=["D1:1"]),
             _fact("next turn cited", user=[1], dia=["D1:4"]),
             _fact("the other speaker's", other=[0], dia=["D1:2"]),
             _fact("names the other speaker", other=[1], dia=["D1:2"], names_other=True),
             _fact("matches nothing", dia=["D1:6"])]
    rejected = {"not_user": 3, "quote_not_found": 1, "unsupported": 0}
    figures = metrics.locomo(_record(facts, rejected))
    assert figures["gold_recall"] == round(2 / 3, 4)
    assert figures["misattribution"] == 0.2  # 1 of 5: naming the other person is allowed
    assert (figures["evidence_precision"], figures["evidence_checked"]) == (0.5, 2)
    assert figures["survival"] == {"proposed": 9, "kept": 5, "kept_share": round(5 / 9, 4)}
    assert metrics.pooled([figures, figures])["gold_recall"] == round(4 / 6, 4)


def test_without_grounded_extraction_evidence_figures_are_not_available():
    facts = [_fact("old", user=[0], evidence=False)]
    figures = metrics.locomo(_record(facts, None))
    assert figures["gold_recall"] == round(1 / 3, 4)
    assert figures["evidence_precision"] is None and figures["survival"] is None
    assert metrics.pooled([figures])["evidence_precision"] is None


def test_scripted_shares_and_reasons():
    def row(case, expected, stored, rejected, applicable=True):
        return {"case": case, "expected": expected, "expected_reason": None, "stored": stored,
                "rejected": rejected, "applicable": applicable, "facts": [],
                "extract": {"rejected": rejected}}

    records = [row("good", "kept", 1, {"not_user": 0}),
               row("assistant", "rejected", 0, {"not_user": 1}),
               row("fabricated", "rejected", 1, {"not_user": 0}),
               row("question", "rejected", 0, None, applicable=False)]
    figures = metrics.scripted(records)
    assert (figures["bad_answers"], figures["bad_rejected_share"]) == (2, 0.5)
    assert (figures["good_answers"], figures["good_kept_share"]) == (1, 1.0)
    assert figures["by_case"]["assistant"]["reasons_given"] == {"not_user": 1}
    assert "question" not in figures["by_case"]
