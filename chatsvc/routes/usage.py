"""GET /api/usage: tokens, cached share and estimated cost per model over a time range."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime, timedelta
from typing import Annotated

from litestar import Request, Router, get
from litestar.di import NamedDependency
from litestar.exceptions import PermissionDeniedException
from litestar.params import QueryParameter

from chatsvc._threads import in_thread
from chatsvc.pricing import price_of
from chatsvc.routes import _validate as check
from store import ChatStore, ModelUsage, UserStore
from store.clock import iso, utc_now

DEFAULT_DAYS = 30
SUMMED = [f.name for f in fields(ModelUsage) if f.name != "model"]


def default_start(end_at: datetime) -> datetime:
    """`DEFAULT_DAYS` before `end_at`: a `to` in year 1's first days has no such day
    (the subtraction overflowed: a 500)."""
    try:
        return end_at - timedelta(days=DEFAULT_DAYS)
    except OverflowError:
        raise check.bad("to", f"must be at least {DEFAULT_DAYS} days after 0001-01-01 "
                              "when from is not given") from None


def figures(usage: ModelUsage, cost: float | None) -> dict:
    share = usage.cached_tokens / usage.reported_prompt_tokens if usage.reported_prompt_tokens \
        else None
    return {"turns": usage.turns, "prompt_tokens": usage.prompt_tokens,
            "cached_tokens": usage.cached_tokens, "completion_tokens": usage.completion_tokens,
            "estimated_turns": usage.estimated_turns,
            "cached_share": None if share is None else round(share, 4),
            "cost_usd": None if cost is None else round(cost, 6)}


def by_model(usage: ModelUsage) -> tuple[dict, float | None]:
    price = price_of(usage.model)
    cost = price.cost(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) \
        if price else None
    return {"model": usage.model, **figures(usage, cost),
            "price": price.as_json() if price else None}, cost


def total(usages: list[ModelUsage], costs: list[float | None]) -> dict:
    summed = ModelUsage(None, **{name: sum(getattr(u, name) for u in usages) for name in SUMMED})
    # One unpriced model makes the total unknown: a partial sum would read as the whole.
    cost = None if None in costs else sum(costs)
    return figures(summed, cost)


@get("/usage", summary="Tokens and estimated cost per model")
async def usage(
    request: Request, chats: NamedDependency[ChatStore], users: NamedDependency[UserStore],
    start: Annotated[str | None, QueryParameter(name="from")] = None,
    end: Annotated[str | None, QueryParameter(name="to")] = None,
    name: Annotated[str | None, QueryParameter(name="user")] = None,
) -> dict:
    end_at = check.moment("to", end) if end else utc_now()
    start_at = check.moment("from", start) if start else default_start(end_at)
    check.in_order("from", start_at, "to", end_at)
    subject = request.user
    if name is not None and name != subject.name:
        if not subject.is_admin:
            raise PermissionDeniedException("only admins can read another user's usage")
        subject = await in_thread(users.named, name)
    found = await in_thread(chats.usage, subject.id, iso(start_at), iso(end_at))
    models = [by_model(u) for u in found]
    return {"user": subject.name, "from": iso(start_at), "to": iso(end_at),
            "models": [body for body, _ in models],
            "total": total(found, [cost for _, cost in models])}


router = Router(path="/api", route_handlers=[usage], tags=["usage"])
