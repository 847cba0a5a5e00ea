"""Per-turn metrics of one conversation and their aggregation per layout and provider.

`Meter` sees the upstream request of every turn in order and returns one row:
prompt and stable-prefix tokens, the longest common token prefix with the
previous request, each provider's predicted cached tokens and cost, the cause of
a miss and what the upstream itself reported (None: it did not say, not 0).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from context.tokens import common_prefix, count_tokens
from evals.cache.attribution import attribute
from evals.cache.prompt import Prompt, parse
from evals.cache.providers import Provider


class Meter:
    """One conversation's cache state under every provider."""

    def __init__(self, providers: dict[str, Provider], *, blocks_in_history: bool = False
                 ) -> None:
        self.providers = providers
        self.blocks_in_history = blocks_in_history
        self.sessions = {pid: p.start() for pid, p in providers.items()}
        self.previous: Prompt | None = None

    def measure(self, messages: list[dict], reply: str, at: float) -> dict:
        prompt = parse(messages, blocks_in_history=self.blocks_in_history)
        view = prompt.cache_view(reply)
        completion = count_tokens(reply)
        previous, self.previous = self.previous, prompt
        miss = attribute(previous, prompt) if previous else None
        row = {
            "prompt_tokens": len(prompt.tokens),
            "stable_tokens": prompt.stable_tokens,
            "lcp_tokens": common_prefix(previous.tokens, prompt.tokens) if previous else None,
            "completion_tokens": completion,
            "miss": miss.as_json() if miss else None,
            "providers": {},
        }
        for pid, provider in self.providers.items():
            served = self.sessions[pid].serve(view, at)
            row["providers"][pid] = {
                "cached": served.cached, "written": served.written, "expired": served.expired,
                "cost": provider.cost(len(prompt.tokens), served, completion),
                "cost_uncached": provider.cost_uncached(len(prompt.tokens), completion),
            }
        return row


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def summarise(rows: Iterable[dict], providers: dict[str, Provider]) -> dict:
    """layout -> provider -> token-weighted cacheable share from turn 2, cost vs no caching."""
    rows = list(rows)
    summary: dict[str, dict] = {}
    for layout in dict.fromkeys(r["layout"] for r in rows):
        mine = [r for r in rows if r["layout"] == layout]
        later = [r for r in mine if r["turn"] >= 2]
        prompt_later = sum(r["prompt_tokens"] for r in later)
        per_provider = {}
        for pid, provider in providers.items():
            cached = sum(r["providers"][pid]["cached"] for r in later)
            entry = {"cacheable_share_from_turn_2": _ratio(cached, prompt_later)}
            if provider.price:
                cost = sum(r["providers"][pid]["cost"] for r in mine)
                plain = sum(r["providers"][pid]["cost_uncached"] for r in mine)
                conversations = len({r["scenario"] for r in mine})
                entry.update(cost_usd=cost, cost_uncached_usd=plain,
                             cost_relative=_ratio(cost, plain),
                             cost_per_conversation_usd=cost / conversations)
            per_provider[pid] = entry
        reported = [r for r in later if r["reported_cached"] is not None]
        summary[layout] = {
            "providers": per_provider,
            "turns": len(mine),
            "conversations": len({r["scenario"] for r in mine}),
            "mean_prompt_tokens": sum(r["prompt_tokens"] for r in mine) / len(mine),
            "mean_stable_tokens": sum(r["stable_tokens"] for r in mine) / len(mine),
            # Turns 2+: the prompt past its common prefix with the previous request, which
            # no provider can serve from its cache.
            "mean_tail_tokens": (sum(r["prompt_tokens"] - r["lcp_tokens"] for r in later)
                                 / len(later) if later else None),
            "reported_share_from_turn_2": _ratio(
                sum(r["reported_cached"] for r in reported),
                sum(r["upstream_prompt_tokens"] or r["prompt_tokens"] for r in reported)),
            "reported_turns": len(reported),
            "misses": miss_counts(mine),
            "cost_by_conversation_usd": {
                pid: cost_per_conversation(mine, layout, pid)
                for pid, provider in providers.items() if provider.price},
        }
    return summary


def miss_counts(rows: Iterable[dict]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["miss"]:
            counts[row["miss"]["cause"]] += 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def share_by_turn(rows: Iterable[dict], layout: str, pid: str) -> list[tuple[int, float]]:
    """(turn, token-weighted share over the conversations that reach that turn)."""
    cached: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for row in rows:
        if row["layout"] == layout:
            cached[row["turn"]] += row["providers"][pid]["cached"]
            total[row["turn"]] += row["prompt_tokens"]
    return [(turn, cached[turn] / total[turn]) for turn in sorted(total)]


def cost_per_conversation(rows: Iterable[dict], layout: str, pid: str) -> dict[str, float]:
    costs: dict[str, float] = defaultdict(float)
    for row in rows:
        if row["layout"] == layout and row["providers"][pid]["cost"] is not None:
            costs[row["scenario"]] += row["providers"][pid]["cost"]
    return dict(costs)
