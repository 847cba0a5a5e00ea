"""Keyword search with three FTS5 set-ups over the same chunks, to choose the tokenizer.

* unicode61: raw text; a CJK run without spaces is one token, so Chinese only
  matches when the query contains the exact same run.
* trigram: raw text, FTS5's trigram tokenizer; query words of 3+ characters and
  every 3-character window of a CJK run (shorter CJK runs cannot match at all).
* bigram (shipped, store/fts.py): unicode61 over text whose CJK runs are
  rewritten as overlapping character bigrams, on both the index and the query.
"""

from __future__ import annotations

import re

import sqlean

from store import fts

CJK = fts.CJK
_TOKEN = re.compile(rf"[{CJK}]+|[^\W_{CJK}]+")


def _quoted(terms: list[str]) -> str | None:
    # The same stopword rule as the shipped builder, so only the tokenizer differs.
    unique = list(dict.fromkeys(t.replace('"', "") for t in terms if t))
    unique = [t for t in unique if t not in fts.STOPWORDS] or unique
    return " OR ".join(f'"{t}"' for t in unique) if unique else None


def unicode61_query(text: str) -> str | None:
    return _quoted([t.lower() for t in _TOKEN.findall(text)])


def trigram_query(text: str) -> str | None:
    terms = []
    for token in _TOKEN.findall(text):
        if re.fullmatch(f"[{CJK}]+", token):
            terms += [token[i : i + 3] for i in range(len(token) - 2)]
        elif len(token) >= 3:
            terms.append(token.lower())
    return _quoted(terms)


VARIANTS = {
    "unicode61": ("unicode61 remove_diacritics 2", lambda t: t, unicode61_query),
    "trigram": ("trigram", lambda t: t, trigram_query),
    "bigram": ("porter unicode61 remove_diacritics 2", fts.index_text, fts.match_query),
}


class Variant:
    """An in-memory FTS5 table of (doc id, text) rows for one tokenizer set-up."""

    def __init__(self, name: str, rows: list[tuple[str, str]]) -> None:
        tokenizer, self._analyse, self._query = VARIANTS[name]
        self._docs = [doc for doc, _ in rows]
        self._conn = sqlean.connect(":memory:")
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{tokenizer}')")
        self._conn.executemany(
            "INSERT INTO t(rowid, body) VALUES (?, ?)",
            [(i, self._analyse(text)) for i, (_, text) in enumerate(rows)],
        )

    def search(self, query: str, limit: int = 20) -> list[str]:
        expression = self._query(query)
        if expression is None:
            return []
        rows = self._conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid LIMIT ?",
            (expression, limit),
        ).fetchall()
        return [self._docs[row[0]] for row in rows]
