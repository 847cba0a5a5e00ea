"""multipart/form-data bodies (already read under the route's limit) into fields.

Not Litestar's form parsing: that one streams under the app's global body limit, and
the upload route has its own. Not the stdlib's MIME parser either: it reads a body
line by line, and 19 MB of newlines held the event loop for 13 s. The body is cut at
its boundary with bytes methods; only each part's few header lines go through the
stdlib (RFC 2231 parameters, quoted file names).
"""

from __future__ import annotations

from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from chatsvc.routes import _validate as check

NOT_MULTIPART = "is not a valid multipart/form-data body"


@dataclass(frozen=True)
class Part:
    data: bytes
    filename: str | None  # set for a file field
    content_type: str


def parse_form(body: bytes, content_type: str) -> dict[str, Part]:
    """The fields by name (the first of a repeated one); 400 when it is not multipart."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise check.bad("body", "must be multipart/form-data")
    boundary = _header(f"Content-Type: {content_type}").get_param("boundary")
    # An RFC 2231 `boundary*=` may decode past latin-1 (was a 500): no bytes match it.
    if not isinstance(boundary, str) or not boundary or max(map(ord, boundary)) > 0xFF:
        raise check.bad("body", NOT_MULTIPART)
    pieces = body.split(b"--" + boundary.encode("latin-1"))
    if len(pieces) < 3 or not pieces[-1].startswith(b"--"):
        raise check.bad("body", NOT_MULTIPART)  # no part, or no closing delimiter
    fields: dict[str, Part] = {}
    for piece in pieces[1:-1]:
        name, part = _part(piece)
        if name is not None and name not in fields:
            fields[name] = part
    return fields


def _part(piece: bytes) -> tuple[str | None, Part]:
    """One part between two delimiters: the rest of the delimiter's line, headers, a
    blank line, the data, and the line break that belongs to the next delimiter."""
    start = piece.find(b"\n") + 1
    # The first blank line ends the headers, CRLF or bare LF (some clients send LF).
    ends = [(at, len(gap)) for gap in (b"\r\n\r\n", b"\n\n")
            if (at := piece.find(gap, start)) >= 0]
    if start == 0 or not ends:
        raise check.bad("body", NOT_MULTIPART)
    blank, gap = min(ends)
    headers = _header(piece[start:blank].decode("utf-8", "replace"))
    data = piece[blank + gap:]
    data = data[:-2] if data.endswith(b"\r\n") else data.removesuffix(b"\n")
    if headers.get("content-transfer-encoding"):  # deprecated (RFC 7578), still decoded
        headers.set_payload(data)
        data = headers.get_payload(decode=True) or b""
    name = headers.get_param("name", header="content-disposition")
    return (name if isinstance(name, str) else None,
            Part(data, headers.get_filename(), headers.get_content_type()))


def _header(lines: str) -> EmailMessage:
    return BytesParser(policy=policy.HTTP).parsebytes(f"{lines}\r\n\r\n".encode())
