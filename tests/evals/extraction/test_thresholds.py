"""The verifier's measurement: LoCoMo pairs, the threshold choice, the adversarial set and
the report section it writes beside other helpers' sections."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from evals.extraction import locomo_pairs, statement_rule, thresholds
from evals.extraction.locomo_pairs import Pair, Turn

CONVERSATION = {
    "speaker_a": "Caroline", "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "I painted a lake sunrise last year."},
        {"speaker": "Caroline", "dia_id": "D1:3", "text": "I want to study counseling."},
    ],
    "session_1_observation": {
        "Caroline": [["Caroline attended a support group.", "D1:1"],
                     ["Caroline wants to study counseling.", ["D1:3"]],
                     ["Caroline painted a lake.", "D1:2"]],  # the turn is Melanie's
        "Melanie": [["Melanie painted a lake sunrise.", "D9:9"]],  # names no turn
    },
}


def test_pairs_are_an_observation_with_its_turn_and_with_another_turn_of_its_speaker():
    pairs, skipped = locomo_pairs.pairs(CONVERSATION, 26, random.Random(1))
    assert skipped == 2
    true = [p for p in pairs if p.true]
    assert [(p.observation, [t.dia_id for t in p.turns]) for p in true] == [
        ("Caroline attended a support group.", ["D1:1"]),
        ("Caroline wants to study counseling.", ["D1:3"])]
    assert true[0].turns[0].said_at == "2023-05-08T13:56:00Z"
    false = [p for p in pairs if not p.true]
    assert [[t.dia_id for t in p.turns] for p in false] == [["D1:3"], ["D1:1"]]


@pytest.mark.parametrize("number", sorted(locomo_pairs.ACCEPTANCE))
def test_the_acceptance_conversations_are_never_read(tmp_path, number):
    with pytest.raises(ValueError, match="acceptance"):
        locomo_pairs.load(tmp_path, number)


def _pair(true: bool) -> Pair:
    return Pair(26, "A", "fact", (Turn("D1:1", "A", "text", None),), true)


def test_the_threshold_is_the_highest_that_keeps_99_percent_of_checked_true_pairs():
    checked = [(_pair(True), True, 0.3 + i / 1000) for i in range(99)]
    low = [(_pair(True), True, 0.12)]  # the 1 % the threshold may lose
    unchecked = [(_pair(True), False, 0.0)] * 50  # a missing name: not in the base
    assert thresholds.choose(checked + low + unchecked) == 0.3
    assert thresholds.choose(checked + low + low) == 0.1


def test_the_section_replaces_only_its_own_text(tmp_path):
    path = tmp_path / "extraction_quality.md"
    thresholds.write_section(path, "## Verifier thresholds\n\nfirst\n")
    assert path.read_text() == "# Extraction quality\n\n## Verifier thresholds\n\nfirst\n"
    others = ("# Extraction quality\n\n## Junk rate\n\njunk 1 %\n\n"
              "## Verifier thresholds\n\nfirst\n\n## Gold recall\n\nrecall 40 %\n")
    path.write_text(others)
    thresholds.write_section(path, "## Verifier thresholds\n\nsecond\n\n")
    assert path.read_text() == others.replace("first\n", "second\n")


def test_the_adversarial_set_is_half_english_half_chinese_with_every_kind():
    conversations = statement_rule.load()
    assert len(conversations) >= 44
    assert len({c["id"] for c in conversations}) == len(conversations)
    kinds = {*statement_rule.NON_STATEMENTS, *statement_rule.STATEMENTS, "assistant_claim"}
    by_language = Counter(c["lang"] for c in conversations)
    assert by_language["en"] == by_language["zh"] == len(conversations) / 2
    for lang in ("en", "zh"):
        assert {c["kind"] for c in conversations if c["lang"] == lang} == kinds
    for conversation in conversations:
        assert 1 <= len(conversation["messages"]) <= 3
        assert {m["role"] for m in conversation["messages"]} <= {"user", "assistant"}
        assert bool(conversation["supported"]) == (conversation["kind"] in
                                                   statement_rule.STATEMENTS)
    first = next(c for c in conversations if c["id"] == "q-en-1")
    assert first["messages"][0]["content"] == "What is my dog called, and where do I live?"


def test_on_the_adversarial_set_no_statement_is_lost_and_no_assistant_line_is_kept():
    measured = statement_rule.measure()
    assert measured["wrongly_rejected"] == []
    assert measured["supported_facts"]["lost"] == []
    assert set(measured["assistant_quotes"]) == {"not_user"}
    injections = measured["by_kind"]["injection"]
    assert injections["rejected"] == injections["quotes"]


def test_quotes_are_the_line_its_sentences_and_what_follows_a_colon():
    assert statement_rule.quotes("Remember this: my dog is Biscuit. I live in Lyon.") == [
        "Remember this: my dog is Biscuit. I live in Lyon.",
        "Remember this: my dog is Biscuit.", "I live in Lyon.",
        "my dog is Biscuit. I live in Lyon.", "my dog is Biscuit."]
    assert statement_rule.quotes("记住：我的狗叫旺财。") == ["记住：我的狗叫旺财。",
                                                          "我的狗叫旺财。"]
