"""PostgreSQL + pgvector backend (selected by CHATSVC_DATABASE_URL; needs psycopg)."""

from store.pg._db import PgDatabase
from store.pg.facts import PgFacts
from store.pg.knowledge import PgKnowledge
from store.pg.memory import PgMemories

__all__ = ["PgDatabase", "PgFacts", "PgKnowledge", "PgMemories"]
