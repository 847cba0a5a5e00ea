"""The shipped corpus (markdown files split at `<!-- doc: ID -->`) and labelled queries."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
_DOC = re.compile(r"<!-- doc: ([a-z0-9-]+) -->\n")


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    content: str


@dataclass(frozen=True)
class Query:
    id: str
    lang: str
    text: str
    relevant: frozenset[str]


def load_docs() -> list[Doc]:
    docs = []
    for path in sorted(HERE.glob("corpus_*.md")):
        parts = _DOC.split(path.read_text("utf-8"))
        for doc_id, body in zip(parts[1::2], parts[2::2], strict=True):
            title, _, content = body.strip().partition("\n")
            docs.append(Doc(doc_id, title.lstrip("# ").strip(), content.strip()))
    return docs


def load_queries() -> list[Query]:
    queries = []
    for line in (HERE / "queries.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            queries.append(Query(row["id"], row["lang"], row["query"], frozenset(row["relevant"])))
    return queries
