"""/api/memory: CRUD (soft delete) and the injection preview, per API.md."""

from __future__ import annotations

from typing import Any

from litestar import Request, Router, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from chatsvc._errors import InvalidMemory
from chatsvc._threads import in_thread
from chatsvc.memory import MemoryFields, MemoryService
from chatsvc.routes import _validate as check
from context.memory import baseline_order
from store import Memory

_EDITABLE = ("content", "type", "scope", "project_id")
_NULLABLE = ("project_id", "query_text")


def memory_json(memory: Memory) -> dict:
    return {
        "id": memory.id,
        "type": memory.type,
        "scope": memory.scope,
        "project_id": memory.project_id,
        "origin": memory.origin,
        "content": memory.content,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }


def _fields(data: dict[str, Any], allowed: tuple[str, ...]) -> dict[str, Any]:
    """`data` if it only holds `allowed` keys with string values (null where nullable)."""
    for key in sorted(data):
        value = data[key]
        if key not in allowed:
            raise InvalidMemory(key, f"unknown field; allowed: {', '.join(allowed)}")
        if not isinstance(value, str) and not (value is None and key in _NULLABLE):
            raise InvalidMemory(key, "must be a string")
        if isinstance(value, str):
            check.plain(key, value)
    return data


def _blank_to_none(value: str | None) -> str | None:
    return value if value and value.strip() else None


@get("/", summary="List memories", description="All live memories, or those that apply in "
     "`project_id` (global + that project's), in injection order.")
async def list_memories(
    request: Request, memory_service: NamedDependency[MemoryService],
    project_id: FromQuery[str | None] = None,
) -> dict:
    if project_id is not None:
        check.plain("project_id", project_id)  # as a stored project id
    memories = await in_thread(
        memory_service.store.list, request.user.id, project_id=_blank_to_none(project_id)
    )
    return {"memories": [memory_json(m) for m in baseline_order(memories)]}


@post("/", summary="Create a memory")
async def create(
    request: Request, memory_service: NamedDependency[MemoryService],
    data: JSONBody[dict[str, Any]]
) -> dict:
    body = _fields(data, _EDITABLE)
    for key in ("content", "type", "scope"):
        if key not in body:
            raise InvalidMemory(key, "required")
    fields = MemoryFields(body["type"], body["scope"], body.get("project_id"), body["content"])
    memory = await memory_service.create(request.user.id, fields)
    return memory_json(memory)


@patch("/{memory_id:str}",
    summary="Change a memory (re-embedded when its content changes)")
async def update(
    request: Request,
    memory_service: NamedDependency[MemoryService], memory_id: FromPath[str],
    data: JSONBody[dict[str, Any]],
) -> dict:
    changes = _fields(data, _EDITABLE)
    if not changes:
        raise InvalidMemory("body", f"set at least one of {', '.join(_EDITABLE)}")
    memory = await memory_service.update(request.user.id, memory_id, changes)
    return memory_json(memory)


@delete("/{memory_id:str}", summary="Delete a memory (soft: never recalled again)")
async def remove(
    request: Request, memory_service: NamedDependency[MemoryService], memory_id: FromPath[str]
) -> None:
    await memory_service.delete(request.user.id, memory_id)


@post("/injection-preview", status_code=200, summary="What a chat turn would inject")
async def injection_preview(
    request: Request, memory_service: NamedDependency[MemoryService], data: JSONBody[dict[str, Any]]
) -> dict:
    body = _fields(data, ("project_id", "query_text"))
    result = await memory_service.injection(
        request.user.id,
        project_id=_blank_to_none(body.get("project_id")),
        query_text=body.get("query_text") or "",
    )
    return {
        "memory": [memory_json(m) for m in result.memory],
        "semantic_memory": [
            {**memory_json(m), "distance": distance} for m, distance in result.semantic_memory
        ],
        "mode": result.mode,
        "degraded_reason": result.degraded_reason,
        "stable_prefix_hash": result.stable_prefix_hash,
    }


router = Router(
    path="/api/memory",
    route_handlers=[list_memories, create, update, remove, injection_preview],
    tags=["memory"],
)
