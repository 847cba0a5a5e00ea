"""Token totals of a user's answers, by model (`GET /api/usage`): a part of
`store.chats.Chats`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.contract import Database


@dataclass
class ModelUsage:
    """Token totals of one model's answers (see `Chats.usage`)."""

    model: str | None  # None: answers stored before the model was recorded with them
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # as the upstream reported them
    # Prompt tokens of the answers whose upstream reported cached tokens (the cached
    # share's denominator: a turn that did not say is not a miss).
    reported_prompt_tokens: int = 0
    estimated_turns: int = 0  # counted by chatsvc: the upstream reported no usage

    def add(self, usage: dict, cached: int | None) -> None:
        prompt = usage.get("prompt_tokens") or 0
        self.turns += 1
        self.prompt_tokens += prompt
        self.completion_tokens += usage.get("completion_tokens") or 0
        self.estimated_turns += bool(usage.get("estimated"))
        if cached is not None:
            self.cached_tokens += cached
            self.reported_prompt_tokens += prompt


class Usage:
    db: Database

    def usage(self, user_id: str, start: str, end: str) -> list[ModelUsage]:
        """Token totals by model of the user's answers stored in [start, end) (ISO times),
        most prompt tokens first. Read through the user's conversations (indexed)."""
        rows = self.db.execute(
            "SELECT m.usage, m.cached_tokens FROM conversations c JOIN messages m "
            "ON m.conversation_id = c.id WHERE c.user_id = $user AND m.user_id = $user "
            "AND m.role = 'assistant' AND m.usage IS NOT NULL "
            "AND m.created_at >= $start AND m.created_at < $end",
            {"user": user_id, "start": start, "end": end},
        ).fetchall()
        totals: dict[str | None, ModelUsage] = {}
        for row in rows:
            usage = json.loads(row["usage"])
            model = usage.get("model")
            totals.setdefault(model, ModelUsage(model)).add(usage, row["cached_tokens"])
        return sorted(totals.values(), key=lambda u: (-u.prompt_tokens, u.model or ""))
