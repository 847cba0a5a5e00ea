"""The chatsvc exception tree.

    ChatsvcError
    ├── SettingsError            bad configuration; the message says how to fix it
    ├── EmbeddingError           the embedding provider failed
    │   └── EmbeddingUnavailable the provider is down (breaker open, refused, timeout)
    ├── UpstreamError            the LLM failed (status_code set when it answered)
    └── (store) StoreError       re-exported from `store`
        ├── NotFound
        ├── DatabaseBusy         the write lock stayed taken past the busy timeout
        └── VectorUnavailable    sqlite-vec missing or dimension CONFLICT
"""

from store import DatabaseBusy, NotFound, StoreError, VectorUnavailable


class ChatsvcError(Exception):
    """Base class of errors raised by chatsvc itself."""


class SettingsError(ChatsvcError):
    """A setting is missing or invalid; the message names the variable and the fix."""


class EmbeddingError(ChatsvcError):
    """The embedding provider returned an error or an unusable response."""


class EmbeddingUnavailable(EmbeddingError):
    """The embedding provider cannot be reached now; callers degrade."""


class UpstreamError(ChatsvcError):
    """The LLM upstream failed. `status_code` is set when it answered with an error."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


__all__ = [
    "ChatsvcError",
    "DatabaseBusy",
    "EmbeddingError",
    "EmbeddingUnavailable",
    "NotFound",
    "SettingsError",
    "StoreError",
    "UpstreamError",
    "VectorUnavailable",
]
