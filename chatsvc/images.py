"""Images in chat messages: what a request's image part is.

An image is an https URL (fetched by the upstream) or a data URL of an image type.
Only the upstream sees images: searches and the message index get the text alone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

# The image types a data URL may carry, each with its file extension.
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
              "image/webp": ".webp"}


@dataclass(frozen=True)
class Image:
    """One image part of a message, checked (chatsvc.routes._images)."""

    url: str  # as sent: https://... or data:image/...;base64,...
    detail: str | None = None  # OpenAI's "auto" | "low" | "high", passed on as given
    mime: str | None = None  # a data URL's
    data: bytes | None = None  # a data URL's decoded bytes

    @cached_property
    def sha256(self) -> str | None:
        return hashlib.sha256(self.data).hexdigest() if self.data is not None else None

    def part(self) -> dict:
        """The OpenAI content part the upstream receives."""
        image_url = {"url": self.url}
        if self.detail is not None:
            image_url["detail"] = self.detail
        return {"type": "image_url", "image_url": image_url}

