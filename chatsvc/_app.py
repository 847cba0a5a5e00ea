"""The Litestar application factory."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.logging import LoggingConfig
from litestar.openapi import OpenAPIConfig

from chatsvc import tools
from chatsvc._auth import auth_middleware
from chatsvc._errors_http import EXCEPTION_HANDLERS
from chatsvc._services import Services
from chatsvc._settings import Settings
from chatsvc._threads import in_thread, running_in_background
from chatsvc.chat import Detached
from chatsvc.extraction import schedule
from chatsvc.routes import DEPENDENCIES, ROUTERS, checks
from store import ChatStore

log = logging.getLogger("chatsvc")


async def interrupt_leftovers(chats: ChatStore) -> None:
    """Answers still `pending` were being streamed by a process that died (kill -9,
    power loss): mark them `interrupted`. Another replica's answer in flight is marked
    too, and set right by its own final save."""
    count = await in_thread(chats.interrupt_pending)
    if count:
        log.warning("marked %d answer(s) left pending by an earlier run interrupted", count)


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> Litestar:
    """An app for `settings` (default: from the environment).

    Pass `services` to share already-open services (tests, the CLI); otherwise they
    are opened at start-up and closed at shutdown.
    """
    settings = settings or (services.settings if services else Settings.from_env())

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        owned = services is None
        app.state.services = services or Services.open(settings)
        app.state.tools_for = tools.chat_tools_for(app.state.services)
        app.state.detached = Detached()
        await interrupt_leftovers(app.state.services.stores.chats)
        try:
            async with (
                # Exited last: the claims of turns still ending stay renewed.
                app.state.services.claims.kept(),
                schedule(app.state.services.extractor, settings.extract_interval_seconds),
                app.state.services.indexer.running(),
                tools.http_endpoint() as app.state.mcp,
                # Stops before what it reads is closed.
                running_in_background(app.state.services.warmup.run()),
                # Exited first: resumable answers stop and are stored before the rest.
                app.state.detached.running(),
            ):
                yield
        finally:
            if owned:
                await app.state.services.aclose()

    return Litestar(
        route_handlers=ROUTERS,
        dependencies=DEPENDENCIES,
        lifespan=[lifespan],
        middleware=[auth_middleware()],
        exception_handlers=EXCEPTION_HANDLERS,
        before_request=checks.single_query_values,
        # Litestar configures the root logger (INFO by default): CHATSVC_LOG_LEVEL is its
        # level, else httpx's request lines are logged on every chat turn.
        logging_config=LoggingConfig(root={"handlers": ["queue_listener"],
                                           "level": settings.log_level}),
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(title="chatsvc", version="0.1.0", path="/schema"),
        debug=False,
    )
