"""Split documents into search chunks. Pure: text in, chunks out.

Paragraph-first: paragraphs are packed into chunks of about `target_tokens`
(as `tokenizer` counts them). A chunk never exceeds `max_chars` (embedding servers such as Ollama
break on long inputs). Over-long paragraphs are split at sentence ends, including
CJK punctuation (。！？；); a single sentence longer than the cap is the only thing
ever cut mid-sentence. Each chunk after the first starts with about
`overlap_chars` of the previous chunk's tail so context carries across the cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from context.tokens import DEFAULT_TOKENIZER, Tokenizer

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"[{CJK}]")
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af]")
_LATIN = re.compile("[A-Za-z]")
# A sentence ends after . ! ? ; (followed by space) or after CJK 。！？； (no space needed).
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*")
_PARAGRAPHS = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    language: str


def chunk_text(
    text: str, *, target_tokens: int = 300, max_chars: int = 800, overlap_chars: int = 50,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
) -> list[Chunk]:
    """The chunks of `text` in order; [] for blank text."""
    if max_chars <= overlap_chars * 2:
        raise ValueError("max_chars must be more than twice overlap_chars")
    piece_cap = max_chars - overlap_chars - 2  # room for the overlap and a separator
    pieces: list[tuple[str, bool]] = []  # (text, starts a paragraph)
    for paragraph in _PARAGRAPHS.split(text.replace("\r\n", "\n")):
        paragraph = paragraph.strip()
        if paragraph:
            parts = _split_paragraph(paragraph, piece_cap, target_tokens, tokenizer)
            pieces.extend((part, i == 0) for i, part in enumerate(parts))
    texts = _pack(pieces, target_tokens, piece_cap, overlap_chars, tokenizer)
    return [Chunk(i, t, guess_language(t)) for i, t in enumerate(texts)]


def _split_paragraph(
    paragraph: str, cap: int, target_tokens: int, tokenizer: Tokenizer
) -> list[str]:
    if len(paragraph) <= cap and tokenizer.count(paragraph) <= target_tokens:
        return [paragraph]
    parts = []
    for sentence in split_sentences(paragraph):
        parts.extend(_hard_split(sentence, cap) if len(sentence) > cap else [sentence])
    return parts


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def join_sentences(sentences: list[str]) -> str:
    """Sentences back into text: a space between Latin ones, none before CJK ones."""
    text = ""
    for sentence in sentences:
        text = _join(text, sentence, new_paragraph=False)
    return text


def _hard_split(sentence: str, cap: int) -> list[str]:
    """Cut one over-long sentence, at a space when there is one in the second half."""
    parts = []
    while len(sentence) > cap:
        cut = sentence.rfind(" ", cap // 2, cap)
        cut = cut if cut > 0 else cap
        parts.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    return [*parts, sentence] if sentence else parts


def _pack(
    pieces: list[tuple[str, bool]], target_tokens: int, cap: int, overlap: int,
    tokenizer: Tokenizer,
) -> list[str]:
    chunks: list[str] = []
    current = ""  # pieces of the chunk being built (without the overlap)
    for piece, new_paragraph in pieces:
        joined = _join(current, piece, new_paragraph)
        if current and (len(joined) > cap or tokenizer.count(joined) > target_tokens):
            chunks.append(_with_overlap(chunks, current, overlap))
            current = piece
        else:
            current = joined
    if current:
        chunks.append(_with_overlap(chunks, current, overlap))
    return chunks


def _join(current: str, piece: str, new_paragraph: bool) -> str:
    if not current:
        return piece
    if new_paragraph:
        return f"{current}\n\n{piece}"
    # CJK sentences are written without a space between them.
    return current + piece if _CJK_CHAR.match(piece[:1]) else f"{current} {piece}"


def _with_overlap(chunks: list[str], body: str, overlap: int) -> str:
    if not chunks or overlap <= 0:
        return body
    return _join(overlap_tail(chunks[-1], overlap), body, new_paragraph=False)


def overlap_tail(text: str, overlap: int) -> str:
    """The last `overlap` characters of `text`, starting at a word when there is one."""
    tail = text[-overlap:]
    space = tail.find(" ")
    if 0 <= space < len(tail) - 1 and not _CJK_CHAR.search(tail):
        tail = tail[space + 1 :]
    return tail.strip()


def guess_language(text: str) -> str:
    """zh / ja / ko / en / und, from the share of script characters."""
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(_LATIN.findall(text))
    if cjk and cjk >= latin / 4:
        if _KANA.search(text):
            return "ja"
        return "ko" if _HANGUL.search(text) else "zh"
    return "en" if latin else "und"
