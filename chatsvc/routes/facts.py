"""Facts API (API.md "Facts"): list, create, get, patch, delete, semantic search.

POST /api/facts/extract belongs to fact extraction and lives elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from litestar import Request, Router, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from chatsvc._threads import in_thread
from chatsvc.facts import FactService, evidence_json, forget_json
from chatsvc.routes import _validate as check
from store import FactStore
from store.facts import Evidence, Fact

LIST_MAX = 200
SEARCH_MAX = 50


@dataclass
class NewFact:
    category: str
    fact: str


@dataclass
class FactChanges:
    category: str | None = None
    fact: str | None = None


def fact_json(fact: Fact, evidence: list[Evidence]) -> dict:
    return {"id": fact.id, "category": fact.category, "fact": fact.fact,
            "created_at": fact.created_at, "updated_at": fact.updated_at,
            "last_extracted_at": fact.last_extracted_at, "mention_count": fact.mention_count,
            "evidence": [evidence_json(e) for e in evidence]}


async def facts_json(store: FactStore, user_id: str, facts: list[Fact]) -> list[dict]:
    evidence = await in_thread(store.evidence, user_id, [f.id for f in facts])
    return [fact_json(f, evidence.get(f.id, [])) for f in facts]


@get(summary="List facts")
async def list_facts(
    request: Request, fact_service: NamedDependency[FactService],
    category: FromQuery[str | None] = None, limit: FromQuery[int] = 50,
    offset: Annotated[int, QueryParameter(ge=0, le=check.MAX_OFFSET)] = 0,
) -> dict:
    facts, total = await in_thread(
        fact_service.store.list, request.user.id, category=category,
        limit=check.bounded("limit", limit, 1, LIST_MAX), offset=offset,
    )
    return {"facts": await facts_json(fact_service.store, request.user.id, facts),
            "total": total}


@post(summary="Save a fact")
async def create_fact(
    request: Request, fact_service: NamedDependency[FactService],
    data: JSONBody[NewFact]
) -> dict:
    check.plain("fact", data.fact)
    fact = await fact_service.create(request.user.id, category=data.category, fact=data.fact)
    return fact_json(fact, [])  # saved by hand: no quotes


@get("/search",
    summary="Semantic fact search")
async def search_facts(
    request: Request,
    fact_service: NamedDependency[FactService], q: FromQuery[str | None] = None,
    limit: FromQuery[int] = 10, max_distance: FromQuery[float] = 1.0,
) -> dict:
    if q is None or not q.strip():
        raise check.bad("q", "a search text is required")
    check.plain("q", q)  # as the knowledge and conversation searches
    check.bounded("limit", limit, 1, SEARCH_MAX)
    if not math.isfinite(max_distance) or max_distance < 0:
        raise check.bad("max_distance", "must be a number >= 0")
    hits = await fact_service.search(
        request.user.id, q.strip(), limit=limit, max_distance=max_distance
    )
    return {"results": [
        {"id": h.fact.id, "fact": h.fact.fact, "category": h.fact.category,
         "last_extracted_at": h.fact.last_extracted_at, "distance": h.distance}
        for h in hits
    ]}


@get("/forgotten", summary="What was forgotten at the user's request")
async def list_forgotten(
    request: Request, fact_service: NamedDependency[FactService],
    limit: FromQuery[int] = 50,
) -> dict:
    forgets = await in_thread(fact_service.store.forgets, request.user.id,
                              limit=check.bounded("limit", limit, 1, LIST_MAX))
    return {"forgotten": [forget_json(f) for f in forgets]}


@get("/{fact_id:str}", summary="One fact")
async def get_fact(
    request: Request, fact_service: NamedDependency[FactService], fact_id: FromPath[str]
) -> dict:
    fact = await in_thread(fact_service.store.get, request.user.id, fact_id)
    return (await facts_json(fact_service.store, request.user.id, [fact]))[0]


@patch("/{fact_id:str}", summary="Change a fact (re-embedded)")
async def update_fact(
    request: Request, fact_service: NamedDependency[FactService], fact_id: FromPath[str],
    data: JSONBody[FactChanges],
) -> dict:
    if data.category is None and data.fact is None:
        raise check.bad("category", "send category and/or fact")
    if data.fact is not None:
        check.plain("fact", data.fact)
    fact = await fact_service.update(request.user.id, fact_id, category=data.category,
                                     fact=data.fact)
    return (await facts_json(fact_service.store, request.user.id, [fact]))[0]


@delete("/{fact_id:str}", summary="Delete a fact and its embedding")
async def delete_fact(
    request: Request, fact_service: NamedDependency[FactService], fact_id: FromPath[str]
) -> None:
    await fact_service.delete(request.user.id, fact_id)


router = Router(
    path="/api/facts",
    route_handlers=[list_facts, create_fact, search_facts, list_forgotten, get_fact, update_fact,
                    delete_fact],
    tags=["facts"],
)
