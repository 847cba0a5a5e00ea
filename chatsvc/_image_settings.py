"""The request body limit when chat messages may carry images (LLM_VISION).

A data URL travels inside the JSON body, base64-encoded (4 bytes for every 3): left at
its default, CHATSVC_MAX_BODY_BYTES grows to hold a message's CHATSVC_MAX_IMAGES images
of CHATSVC_MAX_IMAGE_BYTES each; set explicitly, it must hold one such image at least.
"""

from __future__ import annotations

import dataclasses
import math

from chatsvc._errors import SettingsError


def encoded_size(decoded: int) -> int:
    """The base64 length of `decoded` bytes."""
    return 4 * math.ceil(decoded / 3)


def with_image_body_limit(settings):
    """`settings` (chatsvc.Settings) with a body limit that fits its images."""
    if not settings.vision_enabled:
        return settings
    one = encoded_size(settings.max_image_bytes)
    if "max_body_bytes" in settings.explicit:
        if settings.max_body_bytes < one:
            raise SettingsError(
                f"CHATSVC_MAX_BODY_BYTES={settings.max_body_bytes} cannot carry one image of "
                f"CHATSVC_MAX_IMAGE_BYTES={settings.max_image_bytes} (base64: {one} bytes): "
                "raise it, lower CHATSVC_MAX_IMAGE_BYTES, or leave it unset to fit them.")
        return settings
    return dataclasses.replace(
        settings, max_body_bytes=settings.max_body_bytes + settings.max_images * one)
