"""chatsvc: a streaming chat assistant backend with long-term user memory."""

from chatsvc._app import create_app
from chatsvc._errors import (
    ChatsvcError,
    EmbeddingError,
    EmbeddingUnavailable,
    InvalidFact,
    InvalidMemory,
    NotFound,
    SettingsError,
    StoreError,
    UpstreamError,
    VectorUnavailable,
)
from chatsvc._services import Services
from chatsvc._settings import Settings

__all__ = [
    "ChatsvcError",
    "EmbeddingError",
    "EmbeddingUnavailable",
    "InvalidFact",
    "InvalidMemory",
    "NotFound",
    "Services",
    "Settings",
    "SettingsError",
    "StoreError",
    "UpstreamError",
    "VectorUnavailable",
    "create_app",
]
