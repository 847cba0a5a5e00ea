"""Images in chat messages: what a request's image part is, and the files they are kept in.

An image is an https URL (kept by reference, fetched by the upstream) or a data URL,
whose decoded bytes are kept in a file under the data dir named by their sha256, one
directory per user: the same picture sent twice is one file. A file goes when no
stored image of its user names it (`MessageImages.sweep`, after deletes), or with
its user. Only the upstream sees images: the message index gets the text alone.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from store import ImageStore
from store.clock import new_id
from store.images import ImageIn, StoredImage

# The image types a data URL may carry, each with its file extension.
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
              "image/webp": ".webp"}
_SAFE_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


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

    def stored(self) -> ImageIn:
        """What the store keeps: the URL, or the file's hash."""
        if self.data is None:
            return ImageIn(url=self.url, detail=self.detail)
        return ImageIn(sha256=self.sha256, mime=self.mime, size=len(self.data),
                       detail=self.detail)


def image_json(image: StoredImage) -> dict:
    """How a message's image is shown (its conversation, the export): a file's `url` is
    the route that serves it to its owner."""
    kind = "url" if image.url is not None else "file"
    return {"id": image.id, "kind": kind, "url": image.url or f"/api/images/{image.id}",
            "mime": image.mime, "size": image.size, "detail": image.detail}


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


class ImageFiles:
    """The image files under `root` (CHATSVC_DATA_DIR/images), one directory per user."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, user_id: str) -> Path:
        # Ids are hex today; any other form never becomes a path of its own.
        name = user_id if _SAFE_ID.fullmatch(user_id) else hashlib.sha256(
            user_id.encode()).hexdigest()
        return self.root / name

    def path(self, user_id: str, sha256: str, mime: str) -> Path:
        return self._dir(user_id) / f"{sha256}{EXTENSIONS[mime]}"

    def save(self, user_id: str, image: Image) -> None:
        """Write a data URL's bytes (once per content: the name is their hash), whole or
        not at all: a reader never sees half a file."""
        target = self.path(user_id, image.sha256, image.mime)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{new_id()}.part")  # unique: two writers never meet
        partial.write_bytes(image.data)
        os.replace(partial, target)

    def read(self, user_id: str, image: StoredImage) -> bytes | None:
        """A stored image's bytes; None when its file is gone."""
        try:
            return self.path(user_id, image.sha256, image.mime).read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # not there, or its folder either
            return None

    def listed(self, user_id: str) -> list[Path]:
        folder = self._dir(user_id)
        if not folder.is_dir():
            return []
        return [file for file in folder.iterdir() if file.suffix in EXTENSIONS.values()]

    @staticmethod
    def unlink_unused(files: list[Path], in_use: set[str]) -> int:
        """Delete those of `files` whose hash is not `in_use`; how many."""
        unused = [file for file in files if file.stem not in in_use]
        for file in unused:
            file.unlink(missing_ok=True)
        return len(unused)

    def forget_user(self, user_id: str) -> None:
        shutil.rmtree(self._dir(user_id), ignore_errors=True)


class MessageImages:
    """Stored images of user messages: rows (store.images) and their files, together."""

    def __init__(self, store: ImageStore, files: ImageFiles) -> None:
        self.store = store
        self.files = files

    def save_files(self, user_id: str, images: Sequence[Image]) -> None:
        """Write the data URLs' files, once the rows naming them are committed."""
        for image in images:
            if image.data is not None:
                self.files.save(user_id, image)

    def sweep(self, user_id: str) -> int:
        """Delete the user's files no stored image names any more (after a delete).
        The files are listed before the rows are read: a file written since a turn
        committed its row (`save_files` comes after) is always named by what is read."""
        files = self.files.listed(user_id)
        return self.files.unlink_unused(files, self.store.file_hashes(user_id))

    def forget_users(self, user_ids: list[str]) -> None:
        """After their rows are gone (AccountStore.delete's ids): their image files."""
        for user_id in user_ids:
            self.files.forget_user(user_id)

    def bytes_of(self, user_id: str, image_id: str) -> tuple[StoredImage, bytes | None]:
        """A stored image of the user and its file's bytes (None: by URL, or the file
        is gone); NotFound for another user's."""
        image = self.store.get(user_id, image_id)
        return image, self.files.read(user_id, image) if image.sha256 else None

    def parts(self, user_id: str, conversation_id: str, *,
              only: Collection[str] | None = None) -> dict[str, tuple[dict, ...]]:
        """Each message's images as the upstream receives them (files as data URLs);
        `only`: of those messages alone (a visible branch), the others' files unread."""
        found = {}
        for message_id, images in self.store.of_conversation(user_id, conversation_id).items():
            if only is not None and message_id not in only:
                continue
            parts = [self._part(user_id, image) for image in images]
            found[message_id] = tuple(part for part in parts if part is not None)
        return found

    def _part(self, user_id: str, image: StoredImage) -> dict | None:
        if image.url is not None:
            return Image(image.url, image.detail).part()
        data = self.files.read(user_id, image)
        if data is None:  # its file is gone (deleted by hand): the text still goes
            return None
        return Image(data_url(image.mime, data), image.detail).part()
