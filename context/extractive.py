"""Extractive L0 abstract / L1 overview: whole sentences taken from the text. Pure.

These stand until an LLM writes better ones, and for good when there is no LLM, so
they must read as prose whatever the text came from: Markdown, or an upload's text
(PDF: one line per printed line, no blank line but between pages; DOCX and HTML:
headings as `#` lines, list items as `- `, table rows of cells joined with ` | `).
The lines are put back into items (a wrapped line joins its paragraph, also across a
page break; a heading, list item or table row stands alone), list markers are
stripped, and only sentences of at least `MIN_WORDS` qualify: headings, title lines,
tables of contents, table rows, code and fragments such as a lone `3.` never do.
Nothing is added but a full stop in the text's own script where a list item had none.
docs/knowledge.md ("L0 / L1 / L2") lists the rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from context.chunking import CJK, join_sentences, split_sentences

ABSTRACT_SENTENCES = 3
ABSTRACT_MAX_CHARS = 400
OVERVIEW_POINTS = 8
POINT_MAX_CHARS = 200
MIN_WORDS = 3  # a CJK character counts as half a word
PARAGRAPH_END = 0.7  # share of a paragraph's width its short last line stays under
MIN_WORDS_OPEN = 5  # for a list item without a full stop: shorter ones are labels, menus

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_RULE = re.compile(r"^\s*([-*_=~])(\s*\1){2,}\s*$")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
# Bullets, "1." "1)" "(a)" "iv." numbers, CJK "一、" "（一）" "1、" "①", quotes, checkboxes.
_MARKER = re.compile(
    r"(?:>\s*)*"
    r"(?:(?:[-*+•·●○◦▪‣–—]|\(?(?:\d{1,3}(?:\.\d{1,3})*|[A-Za-z]|[ivxIVX]{1,5})[.)])(?:\s+|$)"
    r"|[（(][一二三四五六七八九十\d]{1,3}[)）]\s*|[一二三四五六七八九十\d]{1,3}[、．]\s*"
    r"|[\u2460-\u2473]\s*)?"
    r"(?:\[[ xX]\]\s+)?")
_SECTION = re.compile(r"\d{1,3}(?:\.\d{1,3})+\.?\s+")
_ENDED = re.compile(r"[.!?。！？][\"'”’」』)）\]]*$")
_OPEN = re.compile(r"[;；:：,，]$|\b(?:e\.g|i\.e|vs|cf|Mr|Mrs|Ms|Dr|St|No|[A-Z])\.$")
_CJK_CHAR = re.compile(f"[{CJK}]")
_LEADER = re.compile(r"(?:\.\s?){4,}|…{2,}|·{4,}")  # a table of contents' dot leaders
_HYPHENATED = re.compile(r"([^\W\d_][\w-]*[^\W\d_])-$")
_WORD = re.compile(r"[^\W\d_]+")
_LONG_WORD = re.compile(r"[^\W\d_]{4,}")


@dataclass
class _Item:
    """One paragraph, list item or line of text, under the Markdown heading it follows."""

    heading: str | None
    lines: list[str] = field(default_factory=list)
    listed: bool = False  # began with a list marker

    @property
    def text(self) -> str:
        return join_sentences(self.lines)


def extractive_tiers(title: str, content: str) -> tuple[str, str]:
    """(abstract, overview): the first sentences, and one key sentence per section
    (or per paragraph when there are fewer than two sections); `title` when the text
    has no sentence at all."""
    items = _items(content)
    found = [(item.heading, sentences) for item in items if (sentences := _sentences(item))]
    abstract = _abstract([s for _heading, sentences in found for s in sentences])
    if not abstract:  # no sentence anywhere: the first line of text, else the title
        abstract = clip(items[0].text if items else title, ABSTRACT_MAX_CHARS)
    return abstract, _overview([(heading, sentences[0]) for heading, sentences in found])


def _abstract(sentences: list[str]) -> str:
    chosen: list[str] = []
    for sentence in sentences[:ABSTRACT_SENTENCES]:
        if chosen and len(join_sentences([*chosen, _ended(sentence)])) > ABSTRACT_MAX_CHARS:
            break
        chosen.append(_ended(sentence))
    return clip(join_sentences(chosen), ABSTRACT_MAX_CHARS)


def _overview(firsts: list[tuple[str | None, str]]) -> str:
    """From each item's (heading, first sentence)."""
    sections: dict[str, str] = {}  # heading -> its first sentence, in order
    for heading, first in firsts:
        if heading is not None:
            sections.setdefault(heading, first)
    if len(sections) >= 2:
        points = [_labelled(heading, first) for heading, first in sections.items()]
    else:
        points = [first for _heading, first in firsts]
    unique = list(dict.fromkeys(clip(p, POINT_MAX_CHARS) for p in points))
    return "\n".join(f"- {p}" for p in unique[:OVERVIEW_POINTS])


# -- items -------------------------------------------------------------------------------


def _items(content: str) -> list[_Item]:
    """The prose items of `content` in order; headings, rows, rules and code left out."""
    items: list[_Item] = []
    heading: str | None = None
    current: _Item | None = None  # the item a next line may go on
    fenced, blank = False, False
    for raw in _FRONT_MATTER.sub("", content).split("\n"):
        line = raw.strip()
        if _FENCE.match(raw):
            fenced, current = not fenced, None
        elif fenced:
            continue
        elif not line:
            blank = True
            continue
        elif match := _HEADING.match(raw):
            heading, current = match.group(1).strip(" ¶"), None  # ¶: Sphinx's anchors
        elif _not_prose(line):
            current = None
        elif (marker := _MARKER.match(line).end()) or not _continues(current, line, blank):
            current = _Item(heading, [line[marker:]], listed=bool(marker))
            items.append(current)
        elif _is_title(current.lines[-1], line) or _ends_paragraph(current, line):
            current = _Item(heading, [line])
            items.append(current)
        elif (hyphen := _HYPHENATED.search(current.lines[-1])) and line[:1].islower():
            # "manip-" "ulation" is one word, "nomic-embed-" "text" keeps its hyphens
            kept = current.lines[-1] if "-" in hyphen.group(1) else current.lines[-1][:-1]
            current.lines[-1] = kept + line
        else:
            current.lines.append(line)
        blank = False
    for item in items:
        item.lines = [line for line in item.lines if line]  # a marker alone on its line
    return [item for item in items if item.lines]


def _continues(current: _Item | None, line: str, blank: bool) -> bool:
    """Whether `line` goes on the item before it: a wrapped line does, and after a blank
    line only a sentence cut by a page break (no full stop, then a lower-case word)."""
    if current is None:
        return False
    if not blank or not current.lines[-1]:
        return True
    return not _ENDED.search(current.lines[-1]) and line[:1].islower()


def _ends_paragraph(item: _Item, line: str) -> bool:
    """Whether the item's last line ends a PDF paragraph (a page holds no blank lines):
    a full stop on a line shorter than the paragraph's others."""
    previous = item.lines[-1]
    width = max(len(other) for other in [*item.lines, line])
    return bool(_ENDED.search(previous)) and len(previous) < PARAGRAPH_END * width


def _is_title(previous: str, line: str) -> bool:
    """Whether `previous` is a title or heading line of a PDF, not a wrapped sentence:
    no full stop, and half as long as the next line or in title case."""
    if not previous or _ENDED.search(previous) or _OPEN.search(previous):
        return False
    if len(previous) * 2 <= len(line):
        return True
    return _title_case(previous) and (line[:1].isupper() or line[:1].isdigit())


def _not_prose(line: str) -> bool:
    """A table row, a rule, a line of a table of contents or a numbered heading."""
    return (" | " in line or line.startswith("|") or bool(_RULE.match(line))
            or bool(_LEADER.search(line)) or _is_section(line))


def _is_section(line: str) -> bool:
    """A numbered heading of a PDF ("2.1 Directory layout"): two levels of numbers, then
    a capital (or CJK) and no full stop, unlike "2.5 metres wide" in a wrapped line."""
    number = _SECTION.match(line)
    if number is None or line.endswith((".", "。")):  # "1.2 What is it?" is one
        return False
    first = line[number.end():][:1]
    return first.isupper() or bool(_CJK_CHAR.match(first))


def _title_case(text: str) -> bool:
    words = _LONG_WORD.findall(_CJK_CHAR.sub(" ", text))
    return len(words) >= 2 and all(word[0].isupper() for word in words)


# -- sentences ---------------------------------------------------------------------------


def _sentences(item: _Item) -> list[str]:
    """The item's sentences of at least MIN_WORDS. Text after its last full stop counts
    only in a list item (often written without one) of MIN_WORDS_OPEN, not in title
    case: elsewhere it is a title page's lines, a caption, a label or a menu. A question
    alone on its line is a heading."""
    if len(item.lines) == 1 and item.text.endswith(("?", "？")):
        return []
    merged: list[str] = []
    for part in split_sentences(item.text):
        if merged and _OPEN.search(merged[-1]):  # "a; b" and "e.g. x" are one sentence
            merged[-1] = join_sentences([merged[-1], part])
        else:
            merged.append(part)
    if merged and not _ENDED.search(merged[-1]) and (
            not item.listed or _title_case(merged[-1])
            or _words(merged[-1]) < MIN_WORDS_OPEN):
        merged.pop()
    return [s for s in merged if _words(s) >= MIN_WORDS]


def _words(text: str) -> float:
    cjk = len(_CJK_CHAR.findall(text))
    return len(_WORD.findall(_CJK_CHAR.sub(" ", text))) + cjk / 2


def _ended(sentence: str) -> str:
    """The sentence with a full stop in its own script when it had none (a list item)."""
    if _ENDED.search(sentence):
        return sentence
    return sentence.rstrip(";；:：,，") + ("。" if _CJK_CHAR.match(sentence[-1:]) else ".")


def _labelled(heading: str, sentence: str) -> str:
    return heading + ("：" if _CJK_CHAR.match(heading[-1:]) else ": ") + sentence


def clip(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word when it has spaces."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:，；：") + "…"
