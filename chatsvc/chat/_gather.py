"""Where each context layer comes from: one async function per source.

The narrow interface between the chat and the domain stores. A source whose
store is not part of this build yet returns nothing, so its layer is empty;
nothing here is ever made up. Store calls run in worker threads.
"""

from __future__ import annotations

from chatsvc._services import Services
from chatsvc._threads import in_thread
from context import ConversationSummary, Doc, FactHit, MemoryItem, Post, SheetFact, Snippet
from store.chats import Conversation

RECENT_CONVERSATIONS = 5
RELATED_FACTS = 10
FALLBACK_POSTS = 3


# -- stable layers (pinned per conversation) ------------------------------------------


async def fact_sheet(services: Services, user_id: str) -> tuple[str | None, list[SheetFact]]:
    """(sheet id, entries) of the user's latest fact sheet."""
    return None, []  # the fact sheet store (issue 4) is not in this build


async def baseline_memory(
    services: Services, user_id: str, project_id: str | None
) -> list[MemoryItem]:
    """The deterministic memory baseline (query-independent)."""
    return []  # the memory store (issue 5) is not in this build


async def pinned_docs(services: Services, user_id: str) -> list[Doc]:
    """Documents pinned into every conversation: no store offers pinning yet."""
    return []


async def recent_conversations(
    services: Services, user_id: str, conversation: Conversation | None
) -> list[ConversationSummary]:
    earlier = await in_thread(
        services.chats.recent, user_id, before=conversation, limit=RECENT_CONVERSATIONS
    )
    return [ConversationSummary(c.id, c.title, c.created_at) for c in earlier]


# -- per-message layers (one query embedding) -----------------------------------------


async def related_facts(services: Services, user_id: str, vector: list[float]) -> list[FactHit]:
    """Top facts by KNN in the user's partition."""
    return []  # the facts store (issue 3) is not in this build


async def semantic_memory(
    services: Services, user_id: str, project_id: str | None, vector: list[float]
) -> list[MemoryItem]:
    return []  # the memory store (issue 5) is not in this build


async def knowledge_snippets(
    services: Services, user_id: str, query: str, vector: list[float]
) -> list[Snippet]:
    return []  # the knowledge store (issue 6) is not in this build


async def recent_posts(services: Services) -> list[Post]:
    """The fallback block: the most recent published posts, newest first."""
    return []  # the posts store (issue 6) is not in this build
