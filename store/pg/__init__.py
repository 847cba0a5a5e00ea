"""PostgreSQL + pgvector backend (selected by CHATSVC_DATABASE_URL; needs psycopg)."""

from store.pg._db import BUILD_SETTINGS, PgDatabase, redact

__all__ = ["BUILD_SETTINGS", "PgDatabase", "redact"]
