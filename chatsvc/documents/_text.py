"""Plain text: decoding (UTF-8, or UTF-16/32 with a BOM), the clean-up every format's
output goes through, and the title of a Markdown file."""

from __future__ import annotations

import codecs
import re

BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)

# The knowledge routes refuse C0 controls but tab/LF/CR (chatsvc/_control.py);
# C1 controls come from text decoded with the wrong code page, lone surrogates from
# broken PDF font maps (SQLite cannot store them), soft hyphens and zero-width marks
# split words for search.
_DROPPED = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u00ad\u200b\ufeff\ud800-\udfff]")
_BREAKS = re.compile("\r\n?|[\x0b\x0c\u2028\u2029]")  # vertical tab, form feed: Word, PDF
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl"})
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_TRAILING = re.compile(r"[ \t]+$", re.M)
_BLANK_RUNS = re.compile(r"\n{3,}")


def decode(data: bytes) -> str | None:
    """The text of `data` if it is Unicode text (strict UTF-8, or a BOM'd UTF-16/32)
    without NUL characters, else None."""
    encoding = next((name for bom, name in BOMS if data.startswith(bom)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def clean(text: str, *, keep_indentation: bool = False) -> str:
    """`text` with LF line ends, no control characters, no trailing spaces and at most
    one blank line in a row. Runs of spaces become one unless `keep_indentation`
    (Markdown and plain text, where leading spaces can mean code or nesting)."""
    text = _DROPPED.sub("", _BREAKS.sub("\n", text)).translate(_LIGATURES)
    if not keep_indentation:
        text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    text = _TRAILING.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip("\n")


def join_blocks(blocks: list[str]) -> str:
    """Blocks apart by a blank line, but list items and table rows one per line."""
    out: list[str] = []
    for block in blocks:
        if out and _item(block) and _item(block) == _item(out[-1]):
            out[-1] += "\n" + block
        else:
            out.append(block)
    return "\n\n".join(out)


def _item(block: str) -> str | None:
    last = block.rsplit("\n", 1)[-1]
    return "list" if last.startswith("- ") else "row" if " | " in last else None


_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)  # YAML, as static site tools write
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)


def markdown_title(text: str) -> str | None:
    """The front matter's `title:`, else the first heading (ATX `# Title` or a setext
    underline) outside code fences."""
    if front := _FRONT_MATTER.match(text):
        if title := _FRONT_TITLE.search(front.group(1)):
            return title.group(1).strip("\"'") or None
        text = text[front.end():]
    fenced, previous = False, ""
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced, previous = not fenced, ""
            continue
        if fenced:
            continue
        if match := _ATX.match(line):
            return match.group(1).strip()
        if previous.strip() and _SETEXT.match(line):
            return previous.strip()
        previous = line
    return None
