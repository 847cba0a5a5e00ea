"""Exceptions raised by the store. `chatsvc` re-exports them in its exception tree."""


class StoreError(Exception):
    """Base class for store failures."""


class NotFound(StoreError):
    """The row does not exist, or belongs to another user (callers cannot tell)."""


class DatabaseBusy(StoreError):
    """Another writer held the write lock for longer than the busy timeout: retry later."""


class VectorUnavailable(StoreError):
    """Vector search cannot run: sqlite-vec did not load, or the dimension conflicts.

    `reason` is operator-facing text that says how to fix it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
