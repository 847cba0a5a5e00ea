"""The admin HTTP API (admin tokens only): users, their tokens and service keys. The
command line (`chatsvc users`, `chatsvc keys`) does the same through chatsvc.admin;
deleting a user is DELETE /api/me's `AccountStore.delete`."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Router, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from chatsvc import admin
from chatsvc._auth import admin_only
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.images import MessageImages
from chatsvc.routes import _validate as check
from store import AccountStore, UserStore

LIST_MAX = 200
Offset = Annotated[int, QueryParameter(ge=0, le=check.MAX_OFFSET)]


def _only(data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise check.bad(unknown[0], f"is not a field here (use {', '.join(fields)})")
    return data


@post("/users", summary="Create a user (admin); its token is shown once", status_code=201)
async def create_user(users: NamedDependency[UserStore], data: JSONBody[dict[str, Any]]) -> dict:
    _only(data, ("name", "timezone", "admin"))
    user, token = await in_thread(admin.new_user, users, data.get("name"),
                                  timezone=data.get("timezone", "UTC"),
                                  admin=data.get("admin", False))
    return {**admin.user_json(user), "token": token, "token_id": token.partition(".")[0]}


@get("/users", summary="Every user with message and fact counts (admin)")
async def list_users(accounts: NamedDependency[AccountStore], limit: FromQuery[int] = 50,
                     offset: Offset = 0) -> dict:
    found, total = await in_thread(accounts.page, offset=offset,
                                   limit=check.bounded("limit", limit, 1, LIST_MAX))
    return {"users": [{**admin.user_json(s.user), "messages": s.messages, "facts": s.facts}
                      for s in found], "total": total}


@delete("/users/{user_id:str}", summary="Delete a user and all their data (admin)",
        status_code=204)
async def delete_user(accounts: NamedDependency[AccountStore],
                      images: NamedDependency[MessageImages], user_id: FromPath[str]) -> None:
    deleted = await in_thread_shielded(accounts.delete, user_id)
    await in_thread_shielded(images.forget_users, deleted)  # end users' files too


@get("/users/{user_id:str}/tokens", summary="A user's tokens, without secrets (admin)")
async def list_tokens(users: NamedDependency[UserStore], user_id: FromPath[str]) -> dict:
    await in_thread(users.get, user_id)  # 404 for an unknown user, not an empty list
    found, total = await in_thread(lambda: users.tokens(user_id=user_id))
    return {"tokens": [admin.token_json(t) for t in found], "total": total}


@post("/users/{user_id:str}/tokens", summary="One more token for a user (admin)",
      status_code=201)
async def create_token(users: NamedDependency[UserStore], user_id: FromPath[str]) -> dict:
    token, secret = await in_thread(admin.new_token, users, user_id)
    return {**admin.token_json(token), "token": secret}


@delete("/tokens/{token_id:str}", summary="Revoke a token at once (admin)", status_code=204)
async def revoke_token(users: NamedDependency[UserStore], token_id: FromPath[str]) -> None:
    await in_thread(users.revoke_token, token_id)


@post("/keys", summary="Create a front end's service key (admin); shown once",
      status_code=201)
async def create_key(users: NamedDependency[UserStore], data: JSONBody[dict[str, Any]]) -> dict:
    _only(data, ("name",))
    _, key = await in_thread(admin.new_key, users, data.get("name"))
    return {**admin.token_json(await in_thread(users.token, key.partition(".")[0])),
            "token": key}


@get("/keys", summary="Service keys, without secrets (admin)")
async def list_keys(users: NamedDependency[UserStore], limit: FromQuery[int] = 50,
                    offset: Offset = 0) -> dict:
    limit = check.bounded("limit", limit, 1, LIST_MAX)
    found, total = await in_thread(lambda: users.tokens(kind="service", limit=limit,
                                                        offset=offset))
    return {"keys": [admin.token_json(t) for t in found], "total": total}


@delete("/keys/{key_id:str}", summary="Revoke a service key at once (admin)", status_code=204)
async def revoke_key(users: NamedDependency[UserStore], key_id: FromPath[str]) -> None:
    await in_thread(lambda: users.revoke_token(admin.service_key(users, key_id).id))


router = Router(path="/api/admin", guards=[admin_only], tags=["admin"], route_handlers=[
    create_user, list_users, delete_user, list_tokens, create_token, revoke_token,
    create_key, list_keys, revoke_key])
