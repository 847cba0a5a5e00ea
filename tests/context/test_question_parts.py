"""The splitter of multi-part questions and the merge of their rankings."""

from __future__ import annotations

import pytest

from context.question_parts import MAX_PARTS, merged, parts


@pytest.mark.parametrize(("question", "expected"), [
    ("Where does my sister work? Also, when does the book club start?",
     ["Where does my sister work?", "when does the book club start?"]),
    ("我姐姐在哪里上班？另外，读书会是几点开始？", ["我姐姐在哪里上班？", "读书会是几点开始？"]),
    ("我住在哪里？还有，我的猫叫什么名字？", ["我住在哪里？", "我的猫叫什么名字？"]),
    ("Did Caroline and Melanie both paint a sunset?",
     ["Did Caroline paint a sunset?", "Did Melanie paint a sunset?"]),
    ("What do Jon and Gina have in common?",
     ["What do Jon have in common?", "What do Gina have in common?"]),
    ("Which city have both Jean and John visited?",
     ["Which city have Jean visited?", "Which city have John visited?"]),
    ("小明和小红都喜欢什么运动？", ["小明喜欢什么运动？", "小红喜欢什么运动？"]),
    ("Which device did I set up first, the smart thermostat or the new router?",
     ["Which device did I set up first, the smart thermostat?",
      "Which device did I set up first, the new router?"]),
    ("How much could I get if I sold the vintage necklace and the antique vanity?",
     ["How much could I get if I sold the vintage necklace?",
      "How much could I get if I sold the antique vanity?"]),
])
def test_a_question_of_several_parts_is_split(question, expected):
    assert parts(question) == expected


@pytest.mark.parametrize("question", [
    "What activities does Melanie partake in?",
    "Did Melanie go camping and hiking?",  # lower-case "and": often one thing
    "I moved in May. Where did I move to?",  # the question needs the statement
    "What did I buy? Why?",  # "Why?" alone is no part
    "Why? Really?",
    "What did I and Mark eat?",  # "I" is no name
    "What is the name of my dog and what breed is it?",
    "When did Caroline go to the LGBTQ support group?",
    "我上个月去了哪里？",
    "我姐姐在哪里上班",
    "",
])
def test_a_question_asking_one_thing_stays_whole(question):
    assert parts(question) == [question]


def test_at_most_max_parts_are_searched():
    question = " ".join(f"Where did I put the key number {n}?" for n in range(MAX_PARTS + 3))
    assert len(parts(question)) == MAX_PARTS


def test_merged_takes_each_rankings_best_before_either_ones_second():
    merged_ids = [item for item, _ in merged([["a1", "a2", "a3"], ["b1", "b2", "b3"]], 4)]
    assert sorted(merged_ids[:2]) == ["a1", "b1"]
    assert sorted(merged_ids[2:]) == ["a2", "b2"]


def test_merged_prefers_at_one_place_what_more_parts_found_and_scores_by_place():
    ranked = merged([["x", "shared", "z"], ["shared", "y"]], 10)
    assert [item for item, _ in ranked] == ["shared", "x", "y", "z"]
    assert [score for _, score in ranked] == [1.0, 1.0, 0.5, 1 / 3]
    # Found second by both parts, it still waits for the other part's first.
    assert [item for item, _ in merged([["a", "s"], ["b", "s"]], 3)] == ["a", "b", "s"]
