"""chatsvc index PATH [--glob GLOB] [--source-type TYPE]

Indexes files (Markdown, text, HTML, PDF, DOCX: read like uploads, see
chatsvc.documents) as shared knowledge entries, idempotently: a file whose content
hash is unchanged is skipped, a changed file replaces its entry, and entries of
that source type under PATH whose file is gone (or no longer matches the glob)
are deleted. Each saved file's chunks are embedded here by the loop an indexing job
runs (`embed_chunks`), its progress bar counting chunks done of total as the job's
`done`/`total` do. LLM tiers are written after the last file, never holding it up.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from chatsvc import source_types
from chatsvc._errors import EmbeddingError
from chatsvc.cli._common import fail, open_services
from chatsvc.documents import DocumentError, extract, sniff
from chatsvc.indexing import embed_chunks
from chatsvc.knowledge import KnowledgeService
from store import Entry, VectorUnavailable
from store.knowledge import content_hash

_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*$", re.MULTILINE)


def register(subparsers) -> None:
    index = subparsers.add_parser("index", help="index files into the shared knowledge base")
    index.add_argument("path", type=Path, help="a file or a directory")
    index.add_argument("--glob", default="**/*", help="files under PATH to index (default **/*)")
    index.add_argument("--source-type", default="document", help="default: document")
    index.set_defaults(run=_index)


def title_of(path: Path, text: str) -> str:
    match = _HEADING.search(text[:4000])
    return match.group(1) if match else path.stem


def selected_files(root: Path, pattern: str) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.glob(pattern) if p.is_file())


def _read(path: Path) -> tuple[str, str] | None:
    """(title, text) by the same sniffing and extraction as uploads (PDF, DOCX, HTML,
    Markdown, text); None for a file that is unreadable, empty or of another kind."""
    try:
        data = path.read_bytes()
        doc = extract(data, sniff(data, path.name, None))
    except (OSError, DocumentError):
        return None
    return doc.title or title_of(path, doc.text), doc.text


def _index(args: argparse.Namespace) -> int:
    if not source_types.valid(args.source_type):
        return fail(f"--source-type: {source_types.RULE}", 2)
    root = args.path.resolve()
    if not root.exists():
        return fail(f"{root} does not exist", 2)
    services = open_services()
    try:
        counts = asyncio.run(index_tree(services.knowledge, root, args.glob, args.source_type))
    finally:
        services.stores.db.close()
    print(", ".join(f"{name} {counts[name]}" for name in
                    ("created", "replaced", "unchanged", "removed", "skipped", "unembedded")))
    return 0


async def index_tree(
    knowledge: KnowledgeService, root: Path, pattern: str, source_type: str
) -> Counter:
    """Mirror the files under `root` into shared entries of `source_type`."""
    known = knowledge.knowledge.sources(None, source_type)
    counts: Counter = Counter({"unembedded": 0})
    seen, to_tier = set(), []
    try:
        files = selected_files(root, pattern)
        for number, path in enumerate(files, 1):
            read = _read(path)
            if read is None:
                counts["skipped"] += 1
                continue
            (title, text), source_id = read, path.as_posix()
            seen.add(source_id)
            if known.get(source_id) == content_hash(title, text):
                counts["unchanged"] += 1
                continue
            saved = await knowledge.save(
                owner_id=None, title=title, content=text, source_type=source_type,
                source_id=source_id, metadata={"path": source_id},
            )
            counts[saved.status] += 1
            if saved.jobs:
                await _embed(knowledge, saved.entry, f"indexing {number}/{len(files)} {path.name}")
            if knowledge.wants_llm_tiers(saved):
                to_tier.append(saved.entry)
        counts["removed"] = _remove_missing(knowledge.knowledge, root, source_type, known, seen)
        counts["unembedded"] = _unembedded_count(knowledge.knowledge)
        await _write_tiers(knowledge, to_tier)
    finally:
        await knowledge.llm.aclose()  # inside the loop its connections belong to
    return counts


async def _embed(knowledge: KnowledgeService, entry: Entry, label: str) -> None:
    """Embed the entry's chunks under a progress bar; on a failure the rest wait for the
    service's backfill (counted in `unembedded`)."""
    with tqdm(total=entry.chunks, desc=label, unit="chunk", file=sys.stderr) as bar:
        try:
            async for done in embed_chunks(knowledge.knowledge, knowledge.embedder.embed_documents,
                                           entry.id):
                bar.update(done - bar.n)
        except (EmbeddingError, VectorUnavailable) as exc:
            bar.write(f"{entry.title}: saved without vectors for now: {exc}")


def _remove_missing(store, root: Path, source_type: str, known: dict, seen: set) -> int:
    prefix = root.as_posix().rstrip("/") + "/"
    gone = [s for s in known if (s == root.as_posix() or s.startswith(prefix)) and s not in seen]
    for source_id in gone:
        store.delete_source(None, source_type, source_id)
    return len(gone)


def _unembedded_count(store) -> int:
    if not store.db.vector_state.ok:
        return -1
    return len(store.unembedded(limit=10**9))


async def _write_tiers(knowledge, entries) -> None:
    """LLM tiers one entry at a time; stop at the first failure (LLM down or unusable)."""
    for entry in entries:
        if not await knowledge.write_llm_tiers(entry.id, entry.content_hash):
            print("LLM tiers: kept extractive summaries (LLM unavailable or unusable)",
                  file=sys.stderr)
            return
