"""Knowledge entries and their chunks: writes (entry + chunks + full-text rows in one
transaction, vectors through the index) and reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from store import fts, vectors
from store._errors import NotFound
from store.clock import new_id, now_iso
from store.contract import Database, EmbedJob
from store.knowledge._records import (
    ENTRY_COLUMNS,
    OF_TYPE,
    PINNED,
    VISIBLE,
    ChunkIn,
    Entry,
    EntryIn,
    Saved,
    content_hash,
    embed_text,
    entry_from,
)
from store.sql import in_list
from store.vectors import VectorIndex

SAVE_BATCH = 500  # entries per chunk insert and read-back (keeps IN lists bounded)
# One source of one owner ('' = shared: the unique index is on that expression).
_OF_SOURCE = "ifnull(owner_id, '') = $owner AND source_type = $type"


class Entries:
    """The entry half of `Knowledge`."""

    db: Database
    _vectors: VectorIndex

    # -- writes ------------------------------------------------------------------------

    def save(
        self,
        *,
        owner_id: str | None,
        title: str,
        content: str,
        source_type: str,
        chunks: list[ChunkIn],
        source_id: str | None = None,
        metadata: dict | None = None,
        abstract: str = "",
        overview: str = "",
    ) -> Saved:
        """Create the entry, replace the one with the same source, or keep an identical one."""
        item = EntryIn(title, content, source_type, chunks, source_id, metadata, abstract,
                       overview)
        return self.save_many(owner_id, [item])[0]

    def save_many(self, owner_id: str | None, items: Sequence[EntryIn]) -> list[Saved]:
        """`save` for many entries of one owner in one transaction, in order (a later item
        with the source of an earlier one replaces it). Chunks, full-text rows and the
        reads back go in a few statements per `SAVE_BATCH` entries: a bulk load's entry
        costs two round trips instead of nine."""
        with self.db.transaction():
            saved = [one for start in range(0, len(items), SAVE_BATCH)
                     for one in self._save_batch(owner_id, items[start:start + SAVE_BATCH])]
        # An entry saved again later in the call (same batch or a later one) replaced the
        # chunks an earlier item made jobs for: only its last save with jobs keeps them.
        last = {one.entry.id: i for i, one in enumerate(saved) if one.jobs}
        return [one if last.get(one.entry.id, i) == i else replace(one, jobs=[])
                for i, one in enumerate(saved)]

    def _save_batch(self, owner_id: str | None, items: Sequence[EntryIn]) -> list[Saved]:
        decided = [self._entry_row(owner_id, item) for item in items]
        # Later items of an entry override earlier ones: its last changed item's chunks.
        jobs = self._insert_chunks({entry_id: items[i] for i, (entry_id, status)
                                    in enumerate(decided) if status != "unchanged"})
        entries = self._read_many([entry_id for entry_id, _ in decided])
        return [Saved(entries[entry_id], status,
                      jobs.get(entry_id, []) if status != "unchanged" else [])
                for entry_id, status in decided]

    def _entry_row(self, owner_id: str | None, item: EntryIn) -> tuple[str, str]:
        """(entry id, status): the entry row written, its old chunks gone."""
        digest = content_hash(item.title, item.content)
        existing = self._existing(owner_id, item.source_type, item.source_id, digest)
        if existing is not None and existing["content_hash"] == digest:
            return existing["id"], "unchanged"
        values = dict(
            owner=owner_id, title=item.title, type=item.source_type, source=item.source_id,
            content=item.content, abstract=item.abstract, overview=item.overview,
            metadata=json.dumps(item.metadata or {}), hash=digest, now=now_iso(),
        )
        if existing is None:
            entry_id = new_id()
            self.db.execute(
                "INSERT INTO knowledge_entries(id, owner_id, title, source_type, source_id, "
                "content, abstract, overview, metadata, content_hash, created_at, "
                "updated_at) VALUES ($id, $owner, $title, $type, $source, $content, "
                "$abstract, $overview, $metadata, $hash, $now, $now)",
                {"id": entry_id, **values})
            return entry_id, "created"
        entry_id = existing["id"]
        self._delete_chunks(entry_id)
        self.db.execute(
            "UPDATE knowledge_entries SET title = $title, content = $content, "
            "abstract = $abstract, overview = $overview, tiers_by = 'extractive', "
            "metadata = $metadata, content_hash = $hash, updated_at = $now "
            "WHERE id = $id", {"id": entry_id, **values})
        return entry_id, "replaced"

    def _existing(self, owner_id, source_type, source_id, digest):
        params = {"owner": owner_id or "", "type": source_type, "source": source_id,
                  "hash": digest}
        if source_id is not None:
            return self.db.execute(
                f"SELECT id, content_hash FROM knowledge_entries WHERE {_OF_SOURCE} "
                "AND source_id = $source", params).fetchone()
        return self.db.execute(
            f"SELECT id, content_hash FROM knowledge_entries WHERE {_OF_SOURCE} "
            "AND content_hash = $hash AND source_id IS NULL", params).fetchone()

    def _insert_chunks(self, items: dict[str, EntryIn]) -> dict[str, list[EmbedJob]]:
        """Three statements whatever the entry and chunk count (a round trip per row was
        most of a bulk load on PostgreSQL): the chunks, their seqs, their full-text
        rows. Jobs by entry id."""
        rows = [{"id": new_id(), "entry": entry_id, "index": index, "content": chunk.text,
                 "language": chunk.language, "hash": vectors.content_hash(chunk.text)}
                for entry_id, item in items.items() for index, chunk in enumerate(item.chunks)]
        if not rows:
            return {}
        self.db.executemany(
            "INSERT INTO knowledge_chunks(id, entry_id, chunk_index, content, language, "
            "content_hash) VALUES ($id, $entry, $index, $content, $language, $hash)", rows)
        entries, params = in_list("entry", items)
        seqs = {row["id"]: row["seq"] for row in self.db.execute(
            f"SELECT id, seq FROM knowledge_chunks WHERE entry_id IN {entries}", params)}
        self.db.executemany(
            "INSERT INTO knowledge_fts(rowid, body) VALUES ($seq, $body)",
            [{"seq": seqs[row["id"]],
              "body": fts.index_text(f"{items[row['entry']].title}\n{row['content']}")}
             for row in rows])
        jobs: dict[str, list[EmbedJob]] = {}
        for row in rows:
            jobs.setdefault(row["entry"], []).append(EmbedJob(
                row["id"], embed_text(items[row["entry"]].title, row["content"]), row["hash"]))
        return jobs

    def _delete_chunks(self, entry_id: str) -> None:
        ids = [row["id"] for row in self.db.execute(
            "SELECT id FROM knowledge_chunks WHERE entry_id = $entry", {"entry": entry_id})]
        self._vectors.drop(ids)
        self.db.execute("DELETE FROM knowledge_chunks WHERE entry_id = $entry",
                        {"entry": entry_id})

    def set_tiers(self, entry_id: str, digest: str, abstract: str, overview: str) -> bool:
        """Store LLM tiers, unless the entry changed (or went) since they were asked for."""
        with self.db.transaction():
            cursor = self.db.execute(
                "UPDATE knowledge_entries SET abstract = $abstract, overview = $overview, "
                "tiers_by = 'llm' WHERE id = $id AND content_hash = $hash",
                {"abstract": abstract, "overview": overview, "id": entry_id, "hash": digest},
            )
        return cursor.rowcount == 1

    def delete(self, entry_id: str) -> None:
        with self.db.transaction():
            self._delete_chunks(entry_id)
            cursor = self.db.execute(
                "DELETE FROM knowledge_entries WHERE id = $id", {"id": entry_id})
        if cursor.rowcount == 0:
            raise NotFound(f"no knowledge entry {entry_id}")

    def delete_source(self, owner_id: str | None, source_type: str, source_id: str) -> bool:
        """Delete the entry of one source (an unpublished post, a removed file)."""
        found = self.db.scalar(
            f"SELECT id FROM knowledge_entries WHERE {_OF_SOURCE} AND source_id = $source",
            {"owner": owner_id or "", "type": source_type, "source": source_id},
        )
        if found is None:
            return False
        self.delete(found)
        return True

    def forget_user(self, owner_id: str) -> None:
        """Delete the user's own entries with their chunks, full-text rows and vectors,
        inside the caller's transaction (`store.accounts`); shared entries stay."""
        owned = {"owner": owner_id}
        chunks = ("SELECT id FROM knowledge_chunks WHERE entry_id IN "
                  "(SELECT id FROM knowledge_entries WHERE owner_id = $owner)")
        self._vectors.drop([row["id"] for row in self.db.execute(chunks, owned).fetchall()])
        self.db.execute(f"DELETE FROM knowledge_chunks WHERE id IN ({chunks})", owned)
        self.db.execute("DELETE FROM knowledge_entries WHERE owner_id = $owner", owned)

    def sources(self, owner_id: str | None, source_type: str) -> dict[str, str]:
        """source_id -> content hash of every entry of one owner and type."""
        rows = self.db.execute(
            f"SELECT source_id, content_hash FROM knowledge_entries WHERE {_OF_SOURCE} "
            "AND source_id IS NOT NULL",
            {"owner": owner_id or "", "type": source_type},
        ).fetchall()
        return {row["source_id"]: row["content_hash"] for row in rows}

    # -- reads -------------------------------------------------------------------------

    def _read_many(self, entry_ids: Sequence[str]) -> dict[str, Entry]:
        ids, params = in_list("id", set(entry_ids))
        rows = self.db.execute(
            f"SELECT {ENTRY_COLUMNS} FROM knowledge_entries e WHERE e.id IN {ids}", params)
        return {row["id"]: entry_from(row) for row in rows}

    def read(self, entry_id: str) -> Entry:
        """The entry whoever owns it (internal callers: tier writer, CLI)."""
        row = self.db.execute(
            f"SELECT {ENTRY_COLUMNS} FROM knowledge_entries e WHERE e.id = $id",
            {"id": entry_id},
        ).fetchone()
        if row is None:
            raise NotFound(f"no knowledge entry {entry_id}")
        return entry_from(row)

    def get(self, entry_id: str, *, viewer_id: str) -> Entry:
        """The entry if `viewer_id` may see it (own or shared); NotFound otherwise."""
        entry = self.read(entry_id)
        if entry.owner_id not in (None, viewer_id):
            raise NotFound(f"no knowledge entry {entry_id}")
        return entry

    def list(
        self, *, viewer_id: str, source_type: str | None = None, pinned: bool | None = None,
        limit: int = 50, offset: int = 0,
    ) -> tuple[list[Entry], int]:
        """Visible entries, newest first; `pinned` True/False keeps the (un)pinned ones."""
        where = f"{VISIBLE} AND {OF_TYPE} AND {PINNED}"
        params = {"viewer": viewer_id, "type": source_type, "limit": limit, "offset": offset,
                  "pinned": None if pinned is None else int(pinned)}
        rows = self.db.execute(
            f"SELECT {ENTRY_COLUMNS} FROM knowledge_entries e WHERE {where} "
            "ORDER BY e.created_at DESC, e.id LIMIT $limit OFFSET $offset",
            params,
        ).fetchall()
        total = self.db.scalar(f"SELECT count(*) FROM knowledge_entries e WHERE {where}", params)
        return [entry_from(row) for row in rows], total

    def stats(self, *, viewer_id: str) -> dict:
        rows = self.db.execute(
            f"SELECT e.source_type, count(*) AS n FROM knowledge_entries e WHERE {VISIBLE} "
            "GROUP BY e.source_type ORDER BY e.source_type",
            {"viewer": viewer_id},
        ).fetchall()
        by_type = {row["source_type"]: row["n"] for row in rows}
        return {"total": sum(by_type.values()), "by_source_type": by_type}
