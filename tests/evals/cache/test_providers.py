"""Each provider's cache rule on hand-made token sequences."""

from __future__ import annotations

import pytest

from evals.cache.providers import CachePrompt, Served, load

PROVIDERS = load()


def tokens(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))


def test_every_rule_names_its_sources():
    for provider in PROVIDERS.values():
        assert provider.sources, provider.id
        assert all("http" in text or "assumption" in text
                   for text in provider.sources.values()), provider.id
    assert set(PROVIDERS) == {"openai", "anthropic", "deepseek", "kimi", "vllm", "llamacpp"}


@pytest.mark.parametrize(("provider", "lcp", "prompt", "cached"), [
    ("openai", 1023, 5000, 0),  # below 1024: nothing
    ("openai", 1024, 5000, 1024),
    ("openai", 1151, 5000, 1024),  # 128-token steps
    ("openai", 1152, 5000, 1152),
    ("openai", 5000, 5000, 4992),
    ("kimi", 255, 900, 0),
    ("kimi", 256, 900, 256),
    ("kimi", 700, 900, 512),
    ("vllm", 15, 200, 0),
    ("vllm", 33, 200, 32),
    ("vllm", 100, 100, 96),  # at most prompt - 1 = 99, in 16-token blocks
    ("vllm", 97, 97, 96),
    ("llamacpp", 57, 200, 57),
    ("llamacpp", 100, 100, 99),  # the last token is always recomputed
])
def test_granular_rules(provider, lcp, prompt, cached):
    assert PROVIDERS[provider].granular_cached(lcp, prompt) == cached


def test_granular_session_uses_the_previous_request_and_the_ttl():
    session = PROVIDERS["openai"].start()
    first = tokens(3000)
    assert session.serve(CachePrompt(first), at=0) == Served(0)
    second = first[:2000] + tokens(500, start=90_000)
    assert session.serve(CachePrompt(second), at=60).cached == 1920  # LCP 2000 -> 15 x 128
    third = second + tokens(10, start=80_000)
    served = session.serve(CachePrompt(third), at=60 + 301)  # idle past the 5-minute TTL
    assert served == Served(0, expired=True)


def test_llamacpp_has_no_ttl():
    session = PROVIDERS["llamacpp"].start()
    session.serve(CachePrompt(tokens(100)), at=0)
    assert session.serve(CachePrompt(tokens(120)), at=86_400).cached == 100


def anthropic_prompt(total: int, stable_end: int, ends: list[int],
                     context_start: int | None = None, start: int = 0) -> CachePrompt:
    body = tokens(stable_end) + tokens(total - stable_end, start=start)
    return CachePrompt(body, [*ends, total], stable_end, context_start)


def test_anthropic_reads_the_stable_breakpoint_and_bills_writes():
    session = PROVIDERS["anthropic"].start()
    first = anthropic_prompt(2000, 1500, [1500], context_start=1500, start=50_000)
    assert session.serve(first, at=0) == Served(cached=0, written=2000)
    second = anthropic_prompt(2300, 1500, [1500], context_start=1500, start=60_000)
    assert session.serve(second, at=30) == Served(cached=1500, written=800)
    # The whole previous prompt was a breakpoint: an extension of it reads all of it.
    third = CachePrompt([*second.tokens, *tokens(40, start=70_000)],
                        [1500, 2300, 2340], 1500, None)
    assert session.serve(third, at=60) == Served(cached=2300, written=40)
    # Five idle minutes later every entry is gone: everything is written again.
    assert session.serve(third, at=60 + 301) == Served(0, 2340, expired=True)


def test_anthropic_minimum_length_and_lookback():
    session = PROVIDERS["anthropic"].start()
    short = CachePrompt(tokens(900), [900], 900, None)
    assert session.serve(short, at=0) == Served(0, 0)  # below 1024 tokens: no breakpoint

    session = PROVIDERS["anthropic"].start()
    base = tokens(2000)
    session.serve(CachePrompt(base, [2000], 0, None), at=0)
    near = base + tokens(100, start=10_000)  # 10 more blocks: within the 20-block lookback
    near_ends = [2000 + 10 * i for i in range(1, 11)]
    assert session.serve(CachePrompt(near, [2000, *near_ends], 0, None), at=1).cached == 2000

    session = PROVIDERS["anthropic"].start()
    session.serve(CachePrompt(base, [2000], 0, None), at=0)
    far = base + tokens(250, start=10_000)  # 25 more blocks: the entry is out of reach
    far_ends = [2000 + 10 * i for i in range(1, 26)]
    assert session.serve(CachePrompt(far, [2000, *far_ends], 0, None), at=1).cached == 0


def test_anthropic_cost_uses_read_and_write_multipliers():
    anthropic = PROVIDERS["anthropic"]
    cost = anthropic.cost(2000, Served(cached=1500, written=500), completion_tokens=100)
    assert cost == pytest.approx((1500 * 0.30 + 500 * 3.75 + 100 * 15.0) / 1e6)
    assert anthropic.cost_uncached(2000, 100) == pytest.approx((2000 * 3.0 + 100 * 15.0) / 1e6)


def test_openai_cost_and_self_hosted_has_none():
    cost = PROVIDERS["openai"].cost(3000, Served(cached=2048), completion_tokens=10)
    assert cost == pytest.approx((2048 * 0.5 + 952 * 2.0 + 10 * 8.0) / 1e6)
    assert PROVIDERS["vllm"].cost(3000, Served(2048), 10) is None


def test_deepseek_hits_only_whole_prefix_units():
    session = PROVIDERS["deepseek"].start()
    a, b, c, d, e = (tokens(300, start=k * 1000) for k in range(5))
    assert session.serve(CachePrompt(a + b), at=0).cached == 0
    assert session.serve(CachePrompt(a + b + c), at=1).cached == 600  # unit A+B
    assert session.serve(CachePrompt(a + d), at=2).cached == 0  # A alone is no unit yet
    assert session.serve(CachePrompt(a + e), at=3).cached == 300  # common prefix A persisted


def test_deepseek_output_end_unit():
    session = PROVIDERS["deepseek"].start()
    prompt, reply = tokens(400), tokens(50, start=5000)
    session.serve(CachePrompt(prompt, output_tokens=prompt + reply), at=0)
    follow_up = prompt + reply + tokens(30, start=9000)
    assert session.serve(CachePrompt(follow_up), at=1).cached == 450
