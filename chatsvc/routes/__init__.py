"""HTTP route handlers, one module per area of API.md.

One style throughout: each module defines its handlers with paths relative to
one `router` (its path prefix and OpenAPI tag), and ROUTERS lists them all.
Handlers ask for what they use by parameter name (`DEPENDENCIES`); none reads
the application state.
"""

from chatsvc.routes import _validate as checks  # the field rules, for tools too
from chatsvc.routes import (
    account,
    admin,
    chat,
    chat_stream,
    console,
    conversations,
    extraction,
    fact_sheet,
    facts,
    feedback,
    health,
    images,
    knowledge,
    mcp,
    memory,
    metrics,
    openai_api,
    posts,
    recall,
    usage,
)
from chatsvc.routes._provide import DEPENDENCIES

ROUTERS = [
    health.router, fact_sheet.router, extraction.router, facts.router, memory.router,
    knowledge.router, posts.router, recall.router, chat.router, conversations.router,
    chat_stream.router, feedback.router, openai_api.router, console.router, account.router,
    admin.router, mcp.router, usage.router, metrics.router, images.router,
]

__all__ = ["DEPENDENCIES", "ROUTERS", "checks"]
