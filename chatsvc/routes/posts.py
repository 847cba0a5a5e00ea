"""Blog posts: everyone reads published posts, admins write (and see drafts).

Published posts are indexed into the knowledge base as shared `post` entries,
re-indexed when they change and removed when unpublished or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litestar import Request, Response, Router, delete, get, patch, post
from litestar.background_tasks import BackgroundTask
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from chatsvc._auth import admin_only
from chatsvc._threads import in_thread
from chatsvc.knowledge import KnowledgeService
from chatsvc.routes import _validate as check
from context.tiers import extractive_tiers
from store import Post, PostStore

MAX_TITLE = 500
MAX_EXCERPT = 2000


@dataclass
class PostIn:
    title: str
    content: str
    published: bool = False
    excerpt: str | None = None


def post_summary(p: Post) -> dict:
    return {"id": p.id, "title": p.title, "excerpt": p.excerpt, "published": p.published,
            "created_at": p.created_at}


def post_full(p: Post) -> dict:
    return {**post_summary(p), "content": p.content, "updated_at": p.updated_at,
            "published_at": p.published_at}


def default_excerpt(title: str, content: str) -> str:
    return extractive_tiers(title, content)[0]


async def _synced(
    knowledge: KnowledgeService, post_obj: Post | None, post_id: str, body: dict, status: int
) -> Response:
    """Index/unindex the post, then answer; LLM tiers run after the response."""
    saved = await knowledge.sync_post(post_obj, post_id)
    background = None
    if saved is not None and knowledge.wants_llm_tiers(saved):
        background = BackgroundTask(knowledge.write_llm_tiers, saved.entry.id,
                                    saved.entry.content_hash)
    return Response(body, status_code=status, background=background)


@get(summary="Recent posts")
async def list_posts(
    request: Request,
    posts: NamedDependency[PostStore], limit: FromQuery[int] = 20,
) -> dict:
    check.bounded("limit", limit, 1, 100)
    found = await in_thread(posts.list, limit=limit, include_drafts=request.user.is_admin)
    return {"posts": [post_summary(p) for p in found]}


@post(summary="Create a post (admin)", guards=[admin_only])
async def create_post(
    request: Request, posts: NamedDependency[PostStore],
    knowledge: NamedDependency[KnowledgeService], data: JSONBody[PostIn],
) -> Response:
    await check.strict_scalars(request, PostIn)
    title = check.text("title", data.title, max_chars=MAX_TITLE).strip()
    content = check.text("content", data.content, max_chars=10**7)
    excerpt = data.excerpt
    if excerpt is not None:
        check.text("excerpt", excerpt, max_chars=MAX_EXCERPT, required=False)
    created = await in_thread(
        posts.create, author_id=request.user.id, title=title, content=content,
        excerpt=excerpt or default_excerpt(title, content), published=data.published,
    )
    return await _synced(knowledge, created, created.id, post_full(created), 201)


@get("/{post_id:str}", summary="One post")
async def get_post(
    request: Request, posts: NamedDependency[PostStore], post_id: FromPath[str]
) -> dict:
    return post_full(await in_thread(posts.get, post_id, include_drafts=request.user.is_admin))


@patch("/{post_id:str}", summary="Change a post (admin)", guards=[admin_only])
async def update_post(
    posts: NamedDependency[PostStore], knowledge: NamedDependency[KnowledgeService],
    post_id: FromPath[str], data: JSONBody[dict[str, Any]],
) -> Response:
    changes = _post_changes(data)
    updated = await in_thread(posts.update, post_id, **changes)
    return await _synced(knowledge, updated, post_id, post_full(updated), 200)


_EDITABLE = ("title", "content", "excerpt", "published")


def _post_changes(data: JSONBody[dict[str, Any]]) -> dict[str, Any]:
    unknown = sorted(set(data) - set(_EDITABLE))
    if unknown:
        raise check.bad(unknown[0], "is not a field of a post")
    if not data:  # as on facts and memory: a PATCH that changes nothing is a mistake
        raise check.bad("body", f"set at least one of {', '.join(_EDITABLE)}")
    changes: dict[str, Any] = {}
    if "title" in data:
        changes["title"] = check.text("title", data["title"], max_chars=MAX_TITLE).strip()
    if "content" in data:
        changes["content"] = check.text("content", data["content"], max_chars=10**7)
    if "excerpt" in data:
        changes["excerpt"] = check.text("excerpt", data["excerpt"], max_chars=MAX_EXCERPT,
                                        required=False)
    if "published" in data:
        if not isinstance(data["published"], bool):
            raise check.bad("published", "must be true or false")
        changes["published"] = data["published"]
    return changes


@delete("/{post_id:str}", summary="Delete a post (admin)", guards=[admin_only])
async def delete_post(
    posts: NamedDependency[PostStore], knowledge: NamedDependency[KnowledgeService],
    post_id: FromPath[str],
) -> None:
    await in_thread(posts.delete, post_id)
    await knowledge.sync_post(None, post_id)


router = Router(
    path="/api/posts",
    route_handlers=[list_posts, create_post, get_post, update_post, delete_post],
    tags=["posts"],
)
