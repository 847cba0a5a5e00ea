"""SQLite + sqlite-vec persistence. No HTTP, no prompts: plain data in, plain data out.

`Database` owns the file, connections, migrations and vector tables; one small
class per domain (`Users`, `Facts`, ...) holds that domain's SQL.
"""

from store._db import Database, VectorState
from store._errors import NotFound, StoreError, VectorUnavailable
from store.facts import Fact, FactHit, Facts, InvalidFact
from store.memory import Memories, Memory, MemorySnapshot
from store.users import User, UserExists, Users

__all__ = [
    "Database",
    "Fact",
    "FactHit",
    "Facts",
    "InvalidFact",
    "Memories",
    "Memory",
    "MemorySnapshot",
    "NotFound",
    "StoreError",
    "User",
    "UserExists",
    "Users",
    "VectorState",
    "VectorUnavailable",
]
