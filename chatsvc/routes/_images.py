"""Image parts of a request, checked: OpenAI's `{"url", "detail"?}` (the `image_url`
of a /v1 content part, an item of /api/chat's `images`), each a 400 naming its field.

An https URL passes as sent; a data URL must be base64 of a PNG, JPEG, GIF or WebP
image (its first bytes say so) no larger than CHATSVC_MAX_IMAGE_BYTES decoded. With
vision off (LLM_VISION, never for the bundled models) any image is a 400 saying how to
turn it on: the model would not see it.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import urlsplit

from chatsvc._image_settings import encoded_size
from chatsvc._settings import Settings
from chatsvc.images import EXTENSIONS, Image
from chatsvc.routes import _validate as check

MAX_URL_CHARS = 2048
DETAILS = ("auto", "low", "high")
_DATA_URL = re.compile(r"data:([^;,]*);base64,(.*)", re.DOTALL)
# What each type's bytes start with (WebP: RIFF, a size, then WEBP).
_SIGNATURES = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
               "image/gif": (b"GIF87a", b"GIF89a")}
SHAPE = '{"url": "https://..." or "data:image/png;base64,...", "detail"?: "auto"|"low"|"high"}'


def vision_off(settings: Settings, field: str):
    why = ("LLM_MODEL is a bundled local model, which cannot see images"
           if settings.llm_is_bundled else "LLM_VISION is off")
    return check.bad(field, f"the model does not take images ({why}): send text only, or "
                            "set LLM_VISION=true for an upstream model that can see")


def images(parts: list[tuple[str, object]], field: str, settings: Settings
           ) -> tuple[Image, ...]:
    """A message's images, in order, within CHATSVC_MAX_IMAGES: `parts` are (the field
    naming it, the raw `{"url", "detail"?}`) of each; `field` names them all."""
    if parts and not settings.vision_enabled:
        raise vision_off(settings, parts[0][0])
    if len(parts) > settings.max_images:
        raise check.bad(field, f"at most {settings.max_images} images in a message "
                               "(CHATSVC_MAX_IMAGES)")
    return tuple(image(raw, name, settings) for name, raw in parts)


def listed(raw, field: str, settings: Settings) -> tuple[Image, ...]:
    """A body's list of images (`null` or absent: none)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise check.bad(field, f"must be a list of {SHAPE}")
    return images([(f"{field}[{i}]", item) for i, item in enumerate(raw)], field, settings)


def image(raw, field: str, settings: Settings) -> Image:
    if not isinstance(raw, dict) or not isinstance(raw.get("url"), str) or set(raw) - {
            "url", "detail"}:
        raise check.bad(field, f"must be {SHAPE}")
    detail = raw.get("detail")
    if detail is not None and detail not in DETAILS:
        raise check.bad(f"{field}.detail", f"must be one of {', '.join(DETAILS)}")
    url = raw["url"]
    if url.startswith("data:"):
        mime, data = _decoded(url, f"{field}.url", settings.max_image_bytes)
        return Image(url, detail, mime, data)
    return Image(_https(url, f"{field}.url"), detail)


def _https(url: str, field: str) -> str:
    if len(url) > MAX_URL_CHARS:
        raise check.bad(field, f"longer than {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme != "https" or not parts.hostname or re.search(
            r"\s", url):
        raise check.bad(field, "must be an https:// URL or a data:image/...;base64, URL")
    return check.plain(field, url)


def _decoded(url: str, field: str, max_bytes: int) -> tuple[str, bytes]:
    """(MIME type, bytes) of a base64 data URL, checked before and after decoding."""
    match = _DATA_URL.fullmatch(url)
    if match is None:
        raise check.bad(field, "a data URL must be data:<image type>;base64,<data>")
    mime, encoded = match.group(1).lower(), match.group(2)
    if mime not in EXTENSIONS:
        raise check.bad(field, f"{mime or 'no type'} is not an image type chatsvc takes: "
                               f"use {', '.join(EXTENSIONS)}")
    if len(encoded) > encoded_size(max_bytes):  # refused before decoding it
        raise check.bad(field, f"more than {max_bytes} bytes (CHATSVC_MAX_IMAGE_BYTES)")
    try:
        data = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise check.bad(field, "the data is not valid base64") from None
    if not data:
        raise check.bad(field, "the image is empty")
    if len(data) > max_bytes:
        raise check.bad(field, f"more than {max_bytes} bytes (CHATSVC_MAX_IMAGE_BYTES)")
    if not _looks_like(mime, data):
        raise check.bad(field, f"the data is not a {mime} image")
    return mime, data


def _looks_like(mime: str, data: bytes) -> bool:
    if mime == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return data.startswith(_SIGNATURES[mime])
