"""The exceptions chatsvc raises: two roots, because `store` never imports chatsvc.

    ChatsvcError                 chatsvc's own errors
    ├── SettingsError            bad configuration; the message says how to fix it
    ├── EmbeddingError           the embedding provider failed
    │   └── EmbeddingUnavailable the provider is down (breaker open, refused, timeout)
    ├── UpstreamError            the LLM failed (status_code set when it answered)
    │   └── UpstreamIncomplete   its answer ended without a finish reason
    ├── InvalidMemory            a memory field is invalid
    ├── InvalidAccount           a field of a new user, token or key is invalid
    └── TooManyStreams           the user already runs CHATSVC_MAX_STREAMS_PER_USER turns

    StoreError                   the store's errors, re-exported from `store`
    ├── NotFound
    ├── DatabaseBusy             the write lock stayed taken past the busy timeout
    ├── VectorUnavailable        sqlite-vec missing or dimension conflict
    ├── TurnInProgress           the conversation's previous turn has not finished
    ├── ConstraintViolation      a duplicate key, check or foreign key failed
    ├── QueryFailed              any other driver failure (sqlite3/psycopg never escape)
    ├── InvalidFact              a fact field the store does not accept
    ├── UserExists               an account of that name exists (409)
    └── AlreadyProcessed         (extraction only, never leaves it)

`chatsvc._errors_http` maps those a request can meet to an HTTP answer, in this
order; anything else is a 500.
"""

from store import (
    DatabaseBusy,
    InvalidFact,
    NotFound,
    StoreError,
    TurnInProgress,
    UserExists,
    VectorUnavailable,
)


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


class UpstreamIncomplete(UpstreamError):
    """The LLM's answer ended without a finish reason: cut short, or not a stream."""


class InvalidMemory(ChatsvcError):
    """A memory field is invalid; `field` names it (answered as 400)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class InvalidAccount(ChatsvcError):
    """A field of a new user, token or service key is invalid (answered as 400)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"invalid value for {field}: {message}")
        self.field = field


class TooManyStreams(ChatsvcError):
    """The user already runs as many chat turns as a process allows (answered as 429)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} chat turns at once per user; retry when one ends")
        self.limit = limit


__all__ = [
    "ChatsvcError",
    "DatabaseBusy",
    "EmbeddingError",
    "EmbeddingUnavailable",
    "InvalidAccount",
    "InvalidFact",
    "InvalidMemory",
    "NotFound",
    "SettingsError",
    "StoreError",
    "TooManyStreams",
    "TurnInProgress",
    "UpstreamError",
    "UpstreamIncomplete",
    "UserExists",
    "VectorUnavailable",
]
