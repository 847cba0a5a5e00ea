"""An app served in-process for one user, carol (the tests' usual caller)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app


@contextmanager
def serve(settings: Settings, embedder) -> Iterator[tuple[Services, TestClient, dict]]:
    """(services, client, carol's headers); the database is closed afterwards."""
    services = Services.open(settings, embedder=embedder)
    try:
        _, token = services.stores.users.add("carol")
        with TestClient(create_app(services=services)) as client:
            yield services, client, {"Authorization": f"Bearer {token}"}
    finally:
        services.stores.db.close()
