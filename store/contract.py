"""The store contract: what every backend (SQLite, PostgreSQL) offers the service.

`Database` is the backend handle: connections, `$name` queries (store/sql.py),
transactions, vector state and the vector index of each vector table. One
protocol per domain says what the service may call; the domain classes
(`store.Users`, `store.Facts`, ...) implement them once for both backends, on
top of `Database`. Callers type against these; `store.backend` picks the backend.
The protocols are runtime-checkable: Litestar's dependency injection checks every
store it hands a route against its protocol (7-26 µs a check).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from store._account_contract import AccountStore, UserStore  # noqa: F401 (public here)
from store._chat_contract import ChatBranchStore
from store._message_contract import ExchangeStore, ImageStore  # noqa: F401 (public here)
from store._vector_state import EmbedJob, VectorState, VectorStatus  # noqa: F401 (public here)
from store._work_contract import ExtractionQueueStore, JobStore  # noqa: F401 (public here)

if TYPE_CHECKING:
    from store.chat_usage import ModelUsage
    from store.chats import AssistantReply, ChatMessage, Conversation, TurnLease
    from store.fact_sheets import FactSheet, SheetInputs
    from store.facts import Evidence, Fact, FactHit
    from store.hybrid import Ranking
    from store.images import ImageIn
    from store.knowledge import ChunkIn, Entry, EntryIn, Hit, Saved
    from store.memory import Memory, MemorySnapshot
    from store.posts import Post
    from store.recall import Bounds, Imported, ImportedMessage, MessageHit
    from store.turn_events import TurnState
    from store.vectors import VectorIndex, VectorSpec

T = TypeVar("T")
Params = Mapping[str, Any]


@runtime_checkable
class Reindexable(Protocol):
    """What a domain store with a vector table offers to backfill and `chatsvc reindex`.

    `unembedded` returns rows with no vector or a vector made from other content;
    `save_embeddings` replaces their vector rows. Reindex = `reset_vectors()` on the
    database, then loop `unembedded` -> embed -> `save_embeddings` until nothing is left.
    """

    table: str

    def unembedded(self, *, limit: int) -> list[EmbedJob]: ...

    def pending_count(self) -> int:
        """How many rows `unembedded` would return without a limit (health, progress)."""
        ...

    def save_embeddings(self, items: list[tuple[EmbedJob, Sequence[float]]]) -> None: ...


@runtime_checkable
class Cursor(Protocol):
    """A statement's result. Rows answer to column names (`row["id"]`)."""

    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


@runtime_checkable
class Database(Protocol):
    """One backend's database: what the domain stores, services and jobs use."""

    dialect: str  # store.sql.SQLITE | store.sql.POSTGRESQL
    path: object  # file path or redacted URL: logs, health, cache keys
    embed_model: str
    embed_dim: int
    vector_state: VectorState

    def connection(self) -> Any:
        """This thread's driver connection (diagnostics and tests; stores use execute)."""
        ...

    def execute(self, query: str, params: Params | None = None) -> Cursor: ...

    def executemany(self, query: str, rows: Iterable[Params]) -> None: ...

    def fetch(self, query: str, params: Params | None, make: Callable[..., T]) -> list[T]: ...

    def scalar(self, query: str, params: Params | None = None) -> Any: ...

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction (a savepoint when nested) on this thread's connection."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Several reads that see one consistent state."""
        ...

    def in_transaction(self) -> bool:
        """Whether this thread's connection is inside a transaction or snapshot."""
        ...

    def vectors(self, spec: VectorSpec, *, rescore: int = 400) -> VectorIndex: ...

    def require_vectors(self) -> None:
        """VectorUnavailable (with the operator's fix) unless vector search can run."""
        ...

    def reset_vectors(self) -> None: ...

    def bulk_vectors(self, tables: Collection[str] | None = None
                     ) -> AbstractContextManager[None]:
        """Many writes to the vector `tables` (None: all) ahead: indexes built once after."""
        ...

    def describe(self) -> str: ...

    def job_lock(self, job: str, key: str, *, wait: bool) -> AbstractContextManager[bool]: ...

    def backup(self, target: Path) -> None:
        """A consistent copy of the whole database at `target`, taken while others write
        (SQLite's online backup); StoreError naming the tool to use where there is none."""
        ...

    def close(self) -> None: ...


# -- domains ---------------------------------------------------------------------------


@runtime_checkable
class ChatStore(ChatBranchStore, Protocol):
    def get(self, user_id: str, conversation_id: str) -> Conversation: ...

    def list(self, user_id: str, *, limit: int = 100, offset: int = 0,
             archived: bool = False) -> list[Conversation]: ...

    def count(self, user_id: str, *, archived: bool = False) -> int: ...

    def change(self, user_id: str, conversation_id: str, *, title: str | None = None,
               archived: bool | None = None) -> Conversation: ...

    def recent(self, user_id: str, *, before: Conversation | None = None, limit: int
               ) -> list[Conversation]: ...

    def active_users(self, *, since: datetime, limit: int) -> list[str]: ...

    def messages(self, user_id: str, conversation_id: str) -> list[ChatMessage]: ...

    def start_turn(self, user_id: str, content: str, *, conversation_id: str | None = None,
                   project_id: str | None = None, name: str | None = None,
                   hold_seconds: float = ..., lease: TurnLease | None = None,
                   reply_id: str | None = None, edit: bool = False,
                   parent_id: str | None = None, images: Sequence[ImageIn] = (),
                   ) -> tuple[Conversation, ChatMessage]: ...

    def renew_turns(self, owner: str, *, lease_seconds: float) -> int: ...

    def free_turns_of(self, owner: str) -> int: ...

    def end_turn(self, user_id: str, conversation_id: str, turn_id: str) -> None: ...

    def finish_turn(self, user_id: str, conversation_id: str, reply: AssistantReply
                    ) -> None: ...

    def interrupt_pending(self) -> int: ...

    def set_snapshot(self, user_id: str, conversation_id: str, snapshot: str) -> None: ...

    def delete(self, user_id: str, conversation_id: str) -> None: ...

    def usage(self, user_id: str, start: str, end: str) -> list[ModelUsage]: ...


@runtime_checkable
class TurnEventStore(Protocol):
    def append(self, conversation_id: str, turn_id: str,
               events: list[tuple[int, str, str]]) -> bool: ...

    def forget_old(self) -> int: ...

    def after(self, user_id: str, conversation_id: str, after: int,
              turn_id: str | None = None) -> TurnState: ...

    def request_stop(self, user_id: str, conversation_id: str) -> str | None: ...

    def running(self, conversation_id: str, turn_id: str) -> bool: ...


@runtime_checkable
class FactStore(Reindexable, Protocol):
    def create(self, user_id: str, *, category: str, fact: str,
               embedding: Sequence[float] | None = None) -> Fact: ...

    def get(self, user_id: str, fact_id: str) -> Fact: ...

    def list(self, user_id: str, *, category: str | None = None, limit: int = 50,
             offset: int = 0) -> tuple[list[Fact], int]: ...

    def recent(self, user_id: str, *, limit: int = 100) -> list[Fact]: ...

    def find_live(self, user_id: str, fact: str) -> Fact | None: ...

    def update(self, user_id: str, fact_id: str, *, category: str | None = None,
               fact: str | None = None, embedding: Sequence[float] | None = None) -> Fact: ...

    def delete(self, user_id: str, fact_id: str) -> None: ...

    def record_extraction(self, fact_id: str, user_id: str, *, message_id: str | None,
                          extracted_at: str) -> None: ...

    def supersede(self, old_id: str, *, by_id: str, at: str) -> None: ...

    def add_evidence(self, user_id: str, fact_id: str, evidence: Sequence[Evidence]) -> None: ...

    def evidence(self, user_id: str, fact_ids: Sequence[str]) -> dict[str, list[Evidence]]: ...

    def forget_conversation(self, user_id: str, conversation_id: str) -> list[str]: ...

    def forget_abandoned(self, user_id: str, conversation_id: str) -> list[str]: ...

    def search_by_vector(self, user_id: str, vector: Sequence[float], *, limit: int = 10,
                         max_distance: float = 1.0) -> list[FactHit]: ...

    def vector_count(self, user_id: str | None = None) -> int: ...


@runtime_checkable
class FactSheetStore(Protocol):
    def inputs(self, user_id: str, *, records_limit: int, now: datetime) -> SheetInputs: ...

    def save(self, user_id: str, *, facts_json: str, fact_count: int, dedup_log: str | None,
             now: datetime) -> FactSheet: ...

    def prune(self, user_id: str, *, now: datetime) -> int: ...

    def latest(self, user_id: str) -> FactSheet | None: ...

    def get(self, user_id: str, sheet_id: str) -> FactSheet: ...

    def list(self, user_id: str) -> list[FactSheet]: ...


@runtime_checkable
class MemoryStore(Reindexable, Protocol):
    def create(self, user_id: str, *, type: str, scope: str, content: str,
               project_id: str | None = None, origin: str = "manual",
               embedding: Sequence[float] | None = None) -> Memory: ...

    def update(self, user_id: str, memory_id: str, *, type: str, scope: str,
               project_id: str | None, content: str,
               embedding: Sequence[float] | None = None) -> Memory: ...

    def delete(self, user_id: str, memory_id: str) -> None: ...

    def get(self, user_id: str, memory_id: str) -> Memory: ...

    def list(self, user_id: str, *, project_id: str | None = None) -> list[Memory]: ...

    def snapshot(self, user_id: str, project_id: str | None) -> MemorySnapshot: ...

    def version(self, user_id: str) -> int: ...

    def recall(self, user_id: str, vector: Sequence[float], *, k: int,
               project_id: str | None) -> list[tuple[Memory, float]]: ...


@runtime_checkable
class KnowledgeStore(Reindexable, Protocol):
    def save(self, *, owner_id: str | None, title: str, content: str, source_type: str,
             chunks: list[ChunkIn], source_id: str | None = None, metadata: dict | None = None,
             abstract: str = "", overview: str = "") -> Saved: ...

    def save_many(self, owner_id: str | None, items: Sequence[EntryIn]) -> list[Saved]: ...

    def set_tiers(self, entry_id: str, digest: str, abstract: str, overview: str) -> bool: ...

    def delete(self, entry_id: str) -> None: ...

    def delete_source(self, owner_id: str | None, source_type: str, source_id: str
                      ) -> bool: ...

    def sources(self, owner_id: str | None, source_type: str) -> dict[str, str]: ...

    def read(self, entry_id: str) -> Entry: ...

    def get(self, entry_id: str, *, viewer_id: str) -> Entry: ...

    def list(self, *, viewer_id: str, source_type: str | None = None,
             pinned: bool | None = None, limit: int = 50, offset: int = 0
             ) -> tuple[list[Entry], int]: ...

    def pin(self, entry_id: str, *, owner_id: str | None, project_id: str | None = None
            ) -> Entry: ...

    def unpin(self, entry_id: str, *, owner_id: str | None) -> Entry: ...

    def pinned(self, user_id: str, project_id: str | None = None) -> list[Entry]: ...

    def stats(self, *, viewer_id: str) -> dict: ...

    def keyword(self, query: str, *, viewer_id: str, source_type: str | None = None,
                limit: int = 10) -> list[Hit]: ...

    def semantic(self, vector: Sequence[float], *, viewer_id: str,
                 source_type: str | None = None, limit: int = 10) -> list[Hit]: ...

    def hybrid(self, query: str, vector: Sequence[float], *, viewer_id: str,
               source_type: str | None = None, limit: int = 10,
               keyword: Ranking | None = None) -> list[Hit]: ...

    def hybrid_keyword(self, query: str, *, viewer_id: str, source_type: str | None = None,
                       limit: int = 10) -> Ranking: ...

    def pending_count(self, entry_id: str | None = None) -> int: ...

    def entry_chunks(self, entry_id: str, *, offset: int, limit: int
                     ) -> list[tuple[EmbedJob, bool]]: ...


@runtime_checkable
class PostStore(Protocol):
    def create(self, *, author_id: str | None, title: str, content: str, excerpt: str,
               published: bool) -> Post: ...

    def get(self, post_id: str, *, include_drafts: bool = True) -> Post: ...

    def list(self, *, limit: int = 20, include_drafts: bool = False) -> list[Post]: ...

    def update(self, post_id: str, **changes: object) -> Post: ...

    def delete(self, post_id: str) -> Post: ...

    def recent_published(self, limit: int = 3) -> list[Post]: ...


@runtime_checkable
class MessageIndexStore(Reindexable, Protocol):
    db: Database
    keys: str  # the key variant (CHATSVC_RECALL_KEYS)

    def build_keys(self, *, limit: int = 500) -> int: ...

    def pending_count(self) -> int: ...

    def status(self, user_id: str) -> tuple[int, int]: ...

    def keyword(self, query: str, bounds: Bounds, *, limit: int = 10,
                prefer: Bounds | None = None) -> list[MessageHit]: ...

    def semantic(self, vector: Sequence[float], bounds: Bounds, *, limit: int = 10
                 ) -> list[MessageHit]: ...

    def hybrid(self, query: str, vector: Sequence[float], bounds: Bounds, *, limit: int = 10,
               pool: int | None = None, keyword: Ranking | None = None,
               prefer: Bounds | None = None,
               facts: Sequence[tuple[str, float]] | None = None) -> list[MessageHit]: ...

    def hybrid_keyword(self, query: str, bounds: Bounds, *, limit: int = 10,
                       pool: int | None = None) -> Ranking: ...

    def speakers(self, user_id: str) -> list[str]: ...


@runtime_checkable
class ImportStore(Protocol):
    def import_conversations(
        self, user_id: str, conversations: list[tuple[str | None, list[ImportedMessage]]]
    ) -> list[Imported]: ...
