"""The caller: GET /api/me, and their data rights: GET /api/export (everything, one
streamed JSON document) and DELETE /api/me (everything, vectors included, confirmed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from litestar import Request, Router, delete, get
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import Stream

from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.export import export_pieces
from chatsvc.images import MessageImages
from chatsvc.routes import _validate as check
from store import AccountStore
from store.backend import Stores


@dataclass
class Confirmation:
    confirm: str | None = None


async def _off_loop(pieces: Iterator[str]) -> AsyncIterator[bytes]:
    """Each piece is read from the database in a worker thread."""
    while (piece := await in_thread(next, pieces, None)) is not None:
        yield piece.encode()


@get("/me", summary="The caller")
async def me(request: Request) -> dict:
    user = request.user
    return {"id": user.id, "name": user.name, "is_admin": user.is_admin,
            "timezone": user.timezone}


@get("/export", summary="Everything of the caller as one JSON document")
async def export(request: Request, stores: NamedDependency[Stores]) -> Stream:
    return Stream(_off_loop(export_pieces(stores, request.user)),
                  media_type="application/json", headers={
                      "Content-Disposition": 'attachment; filename="chatsvc-export.json"',
                      "Cache-Control": "no-store"})


@delete("/me", summary="Delete the caller and all their data", status_code=204)
async def delete_me(request: Request, accounts: NamedDependency[AccountStore],
                    images: NamedDependency[MessageImages],
                    data: JSONBody[Confirmation | None] = None) -> None:
    name = request.user.name
    if data is None or data.confirm != name:
        raise check.bad("confirm", f'send {{"confirm": "{name}"}} (your user name) to '
                                   "delete this account and all its data")
    deleted = await in_thread_shielded(accounts.delete, request.user.id)
    await in_thread_shielded(images.forget_users, deleted)


router = Router(path="/api", route_handlers=[me, export, delete_me], tags=["users"])
