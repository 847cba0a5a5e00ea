"""Aggregation: token-weighted shares from turn 2, costs vs no caching, unknown != 0."""

from __future__ import annotations

import pytest

from evals.cache import ttft
from evals.cache.metrics import Meter, summarise
from evals.cache.providers import load

PROVIDERS = {pid: p for pid, p in load().items() if pid in ("openai", "llamacpp")}


def row(turn, prompt, cached, *, layout="before_last_user", reported=None, cost=1.0):
    return {
        "layout": layout, "scenario": "s1", "turn": turn, "prompt_tokens": prompt,
        "stable_tokens": 100, "reported_cached": reported, "upstream_prompt_tokens": prompt,
        "lcp_tokens": cached if turn > 1 else None,
        "miss": {"cause": "per-message block"} if turn > 1 else None,
        "providers": {pid: {"cached": cached, "cost": cost * (prompt - cached / 2),
                            "cost_uncached": cost * prompt} for pid in PROVIDERS},
    }


def test_share_is_token_weighted_from_turn_two():
    rows = [row(1, 1000, 0), row(2, 2000, 1000), row(3, 8000, 7000)]
    summary = summarise(rows, PROVIDERS)["before_last_user"]
    share = summary["providers"]["openai"]
    assert share["cacheable_share_from_turn_2"] == pytest.approx(8000 / 10000)
    assert summary["mean_tail_tokens"] == pytest.approx((1000 + 1000) / 2)
    # Costs cover every turn: (1000 + 1500 + 4500) / 11000.
    assert share["cost_relative"] == pytest.approx(7000 / 11000)
    assert "cost_relative" not in summarise(rows, PROVIDERS)["before_last_user"][
        "providers"]["llamacpp"]  # self-hosted: no price


def test_unreported_cached_tokens_stay_unknown():
    rows = [row(1, 1000, 0), row(2, 2000, 1000, reported=None), row(3, 3000, 2000, reported=0)]
    summary = summarise(rows, PROVIDERS)["before_last_user"]
    assert summary["reported_turns"] == 1  # the None turn is not counted as 0
    assert summary["reported_share_from_turn_2"] == 0.0
    assert summary["misses"] == {"per-message block": 2}


def test_meter_first_turn_has_no_lcp_and_second_has_one():
    meter = Meter(PROVIDERS)
    system = {"role": "system", "content": "You are helpful. " * 400}
    first = meter.measure([system, {"role": "user", "content": "hi"}], "hello", at=0)
    second = meter.measure([system, {"role": "user", "content": "hi"},
                            {"role": "assistant", "content": "hello"},
                            {"role": "user", "content": "more"}], "ok", at=30)
    assert first["lcp_tokens"] is None and first["miss"] is None
    assert second["lcp_tokens"] == first["prompt_tokens"]  # an extension: no miss
    assert second["miss"] is None
    assert second["providers"]["openai"]["cached"] == first["prompt_tokens"] // 128 * 128


def test_ttft_summary_compares_served_and_uncached():
    rows = [dict(row(t, 1000, 900), ttft_seconds=0.2, ttft_uncached_seconds=1.0)
            for t in (2, 3)]
    rows.append(dict(row(1, 1000, 0), ttft_seconds=1.1))  # turn 1 is not probed
    layout = ttft.summarise(rows)["layouts"]["before_last_user"]
    assert layout["turns"] == 2
    assert layout["ttft_served_s"] == pytest.approx(0.2)
    assert layout["ttft_uncached_s"] == pytest.approx(1.0)
    assert layout["cached_tokens"] == 900
