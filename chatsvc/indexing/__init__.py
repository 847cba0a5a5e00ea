"""Background indexing: the job queue (`/api/knowledge/jobs`) and the backfill of every
vector index, run by one `Indexer` per process (started with the app)."""

from chatsvc.indexing._indexer import Indexer
from chatsvc.indexing._job import INDEX, KINDS, REINDEX, UPLOAD, embed_chunks

__all__ = ["INDEX", "KINDS", "REINDEX", "UPLOAD", "Indexer", "embed_chunks"]
