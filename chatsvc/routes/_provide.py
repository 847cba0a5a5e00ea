"""What route handlers may ask for by parameter name (Litestar dependency injection).

Each name is one piece of the process's `Services` (opened at start-up, kept in
`app.state.services`); a handler declares only the pieces it uses.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from litestar.datastructures import State
from litestar.di import Provide
from litestar.types import ASGIApp, Scope

# parameter name -> attribute path on Services
_PIECES = {
    "settings": "settings",
    "llm": "llm",
    "health": "health",
    "sources": "sources",
    "slots": "slots",
    "extractor": "extractor",
    "fact_service": "fact_service",
    "memory_service": "memory_service",
    "knowledge": "knowledge",
    "uploads": "uploads",
    "images": "images",
    "knowledge_store": "stores.knowledge",
    "users": "stores.users",
    "chats": "stores.chats",
    "exchanges": "stores.exchanges",
    "turn_events": "stores.turn_events",
    "messages": "stores.messages",
    "imports": "stores.imports",
    "recall": "recall",
    "fact_sheets": "stores.fact_sheets",
    "posts": "stores.posts",
    "accounts": "stores.accounts",
    "stores": "stores",  # the export reads every domain
    "jobs": "stores.jobs",
}


def _provider(path: str) -> Provide:
    piece = attrgetter(path)

    def provide(state: State) -> Any:
        return piece(state.services)

    return Provide(provide, sync_to_thread=False)


def _tools_for(state: State) -> Any:
    """What builds a chat turn's tools as its user (`chatsvc.tools.chat_tools_for`, kept
    beside `Services` at start-up: the tools package imports the routes)."""
    return state.tools_for


def _detached(state: State) -> Any:
    """The runner of resumable turns (`chatsvc.chat.Detached`): a task group open for
    the app's lifespan, kept beside `Services`."""
    return state.detached


DEPENDENCIES = {name: _provider(path) for name, path in _PIECES.items()} | {
    "tools_for": Provide(_tools_for, sync_to_thread=False),
    "detached": Provide(_detached, sync_to_thread=False)}


def mounted_mcp(scope: Scope) -> ASGIApp:
    """The MCP SDK's app for an ASGI mount, which gets no dependency injection: started
    with the service (`chatsvc.tools.http_endpoint`) and kept beside its `Services`."""
    return scope["litestar_app"].state.mcp
