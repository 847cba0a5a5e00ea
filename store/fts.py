"""Full-text analysis for FTS5: CJK bigrams and a query builder that cannot fail.

unicode61 sees a run of Chinese characters as one token (no spaces), so Chinese
text would only match whole phrases. Both the indexed text and the query are
therefore rewritten: every CJK run becomes its overlapping character bigrams
(the classic CJK indexing scheme); other words pass through. The choice against
the trigram tokenizer was measured: evals/results/retrieval.md.

User queries never reach FTS5 as syntax: they are reduced to word and bigram
terms, each double-quoted, joined with OR; `"`, AND, NEAR(, *, : are just text.
"""

from __future__ import annotations

import re

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{CJK}]+")
_TERM = re.compile(rf"[{CJK}]+|[^\W_{CJK}]+")
MAX_QUERY_TERMS = 64
# Question and function words carry no topic; OR-ing them in lets BM25 rank documents
# that share only "how" or "什么" with the query. Dropped unless nothing else is left.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for",
    "from", "get", "has", "have", "how", "i", "if", "in", "is", "it", "its", "me", "my",
    "of", "on", "or", "our", "should", "so", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "to", "was", "we", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your", "怎么", "什么", "为什", "多少", "如何",
    "可以", "哪些", "是否", "我们", "你们", "他们", "一个", "这个", "那个", "的是", "了吗",
})


def bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """The text stored in the FTS table: CJK runs replaced by their bigrams."""
    return _CJK_RUN.sub(lambda m: f" {' '.join(bigrams(m.group()))} ", text)


def query_terms(text: str) -> list[str]:
    """Lower-cased word terms and CJK bigrams of a user query, deduplicated, in order."""
    terms: list[str] = []
    for match in _TERM.finditer(text):
        token = match.group()
        pieces = bigrams(token) if _CJK_RUN.fullmatch(token) else [token.lower()]
        terms.extend(p for p in pieces if p not in terms)
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms)[:MAX_QUERY_TERMS]


def match_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for `text`, or None when it has no searchable term."""
    terms = query_terms(text)
    return or_match(terms) if terms else None


def or_match(terms: list[str]) -> str:
    """The FTS5 MATCH expression for any of `terms` (from `query_terms`)."""
    # Terms hold only word characters, so quoting makes each one a plain string.
    return " OR ".join(f'"{t}"' for t in terms)


# How many times `anchored_match` writes each term.
ANCHORED_REPEATS = 2


def anchored_match(anchors: list[str], others: list[str]) -> str:
    """The rows holding any of `anchors`, scored as `or_match(anchors + others)` is, times
    ANCHORED_REPEATS: FTS5's BM25 sums a score per phrase of the expression, and here
    each term is written twice. Only the anchors' rows are ranked, so `others` (frequent
    terms) cost a lookup per ranked row, not a score for each row they are in."""
    return f"({or_match(anchors)}) AND ({or_match(anchors + others + others)})"


def first_hit(text: str, query: str) -> int:
    """Where the first query term occurs in `text` (for snippets), or 0."""
    lowered = text.lower()
    positions = [lowered.find(t) for t in query_terms(query)]
    found = [p for p in positions if p >= 0]
    return min(found) if found else 0
