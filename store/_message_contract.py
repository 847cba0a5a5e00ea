"""The store contract's domains beside a conversation's turns: /v1 exchanges
(store.exchanges) and messages' images (store.images), re-exported by
`store.contract`, kept apart so that the contract module stays small."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from store.exchanges import Answer, Recorded, Said
    from store.images import ImageIn, StoredImage


@runtime_checkable
class ExchangeStore(Protocol):
    def record_question(self, user_id: str, said: list[Said], *, key: str | None = None,
                        images: Sequence[ImageIn] = ()) -> Recorded: ...

    def record_answer(self, user_id: str, recorded: Recorded, said: list[Said],
                      answer: Answer) -> str: ...


@runtime_checkable
class ImageStore(Protocol):
    def get(self, user_id: str, image_id: str) -> StoredImage: ...

    def of_conversation(self, user_id: str, conversation_id: str
                        ) -> dict[str, list[StoredImage]]: ...

    def file_hashes(self, user_id: str) -> set[str]: ...
