"""Conversational recall: every stored message indexed per user for hybrid search.

`MessageIndex` keys messages in the background (`_keys`: what a message is
indexed as), keeps their full-text rows and vectors (`_index`) and searches them
(`_search`). `ConversationImports` (`_imports`) writes imported conversations.
"""

from __future__ import annotations

from store.contract import Database
from store.recall._imports import ConversationImports, Imported, ImportedMessage
from store.recall._index import VECTORS, Indexing
from store.recall._keys import (
    DEFAULT_KEYS,
    KEY_VARIANTS,
    PASSAGE_TOKENS,
    KeyedMessage,
    embedded_key,
    index_key,
    passage_head,
    speaker,
)
from store.recall._names import names_in, without_names
from store.recall._search import Bounds, FactKeys, MessageHit, Searching


class MessageIndex(Indexing, Searching):
    """One index over every user's messages; every search is scoped to one user.
    `facts`: where the fact keys come from (`FactKeys`; None: none)."""

    def __init__(self, db: Database, *, keys: str = DEFAULT_KEYS, rescore: int = 400,
                 facts: FactKeys | None = None) -> None:
        super().__init__(db, keys=keys, rescore=rescore)
        self._facts = facts


__all__ = [
    "DEFAULT_KEYS", "KEY_VARIANTS", "PASSAGE_TOKENS", "VECTORS", "Bounds", "ConversationImports",
    "FactKeys", "Imported", "ImportedMessage", "KeyedMessage", "MessageHit", "MessageIndex",
    "embedded_key", "index_key", "names_in", "passage_head", "speaker", "without_names",
]
