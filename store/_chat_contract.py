"""The branch and feedback part of `store.contract.ChatStore` (store.branches,
store.feedback), kept apart so that the contract module stays small."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from store.branches import BranchView
    from store.chats import ChatMessage, Conversation, TurnLease
    from store.feedback import Feedback


class ChatBranchStore(Protocol):
    def branch(self, user_id: str, conversation_id: str) -> list[ChatMessage]: ...

    def branch_view(self, user_id: str, conversation_id: str) -> BranchView: ...

    def choose(self, user_id: str, conversation_id: str, message_id: str) -> None: ...

    def start_regenerate(self, user_id: str, conversation_id: str, *, reply_id: str,
                         hold_seconds: float, lease: TurnLease | None = None
                         ) -> tuple[Conversation, ChatMessage]: ...

    def rate(self, user_id: str, message_id: str, rating: str, comment: str | None
             ) -> Feedback: ...

    def unrate(self, user_id: str, message_id: str) -> None: ...

    def feedback(self, user_id: str, message_ids: Sequence[str]) -> dict[str, Feedback]: ...
