"""PostgreSQL + pgvector backend (selected by CHATSVC_DATABASE_URL; needs psycopg)."""

from store.pg._db import PgDatabase, redact

__all__ = ["PgDatabase", "redact"]
