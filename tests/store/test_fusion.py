"""How hybrid search merges its keyword and vector rankings (store/hybrid.py)."""

import pytest

from store.hybrid import convex_merge

# Near-equal cosine scores: the vector ranking barely tells these messages apart,
# while the keyword ranking separates "a" clearly from everything but "b".
SEMANTIC = [("b", 0.800), ("c", 0.799), ("d", 0.798), ("a", 0.797), ("e", 0.400)]
KEYWORD = [("a", 10.0), ("b", 9.9), ("c", 1.0)]


def test_the_ranking_that_separates_the_candidates_decides():
    merged = convex_merge([KEYWORD, SEMANTIC])
    assert [item for item, _ in merged][:2] == ["a", "b"]
    # (Reciprocal Rank Fusion, which this replaced, put "b" first: it reads the vector
    # ranking's 0.003 gap as three whole ranks.)


def test_scores_are_the_mean_of_each_rankings_scaled_score():
    scores = dict(convex_merge([KEYWORD, SEMANTIC]))
    assert scores["a"] == pytest.approx((1.0 + 0.397 / 0.4) / 2)
    assert scores["e"] == 0.0  # last of the only ranking that found it
    assert scores["c"] == pytest.approx((0.0 + 0.399 / 0.4) / 2)
    assert all(0.0 <= score <= 1.0 for score in scores.values())


def test_a_ranking_of_equal_scores_counts_fully_and_ties_go_by_id():
    assert convex_merge([[("y", 3.0), ("x", 3.0)]]) == [("x", 1.0), ("y", 1.0)]
    assert convex_merge([[("only", 0.2)], []]) == [("only", 0.5)]
    assert convex_merge([]) == [] and convex_merge([[], []]) == []


def test_each_rankings_head_comes_before_what_both_found_middling():
    # "k" is the keyword ranking's best and the vector ranking never saw it; "m" both
    # rankings placed second or third. The mean puts "m" first, the head keeps "k" ahead.
    keyword = [("k", 9.0), ("m", 5.0), ("n", 4.0), ("z", 1.0)]
    semantic = [("s", 0.9), ("n", 0.85), ("m", 0.85), ("z", 0.1)]
    assert [item for item, _ in convex_merge([keyword, semantic])][:3] == ["m", "n", "k"]
    merged = convex_merge([keyword, semantic], head=1)
    assert [item for item, _ in merged] == ["k", "s", "m", "n", "z"]
    scores = dict(merged)
    assert scores["k"] == pytest.approx((0.5 + 1) / 2)  # mean 0.5, then the head's 1
    assert scores["m"] == pytest.approx(dict(convex_merge([keyword, semantic]))["m"] / 2)
    assert scores["z"] == 0.0
