"""GET /metrics: Prometheus text format, for CHATSVC_METRICS_TOKEN or an admin's token."""

from __future__ import annotations

from litestar import Response, Router, get

from chatsvc import metrics
from chatsvc._auth import metrics_reader
from chatsvc._threads import in_thread


# media_type: what the schema documents (it said application/json, found by fuzzing).
@get("/metrics", summary="Prometheus metrics", guards=[metrics_reader], tags=["operations"],
     media_type=metrics.CONTENT_TYPE)
async def scrape() -> Response[bytes]:
    # Off the event loop: with --workers it reads every worker's metric files.
    return Response(await in_thread(metrics.exposition), media_type=metrics.CONTENT_TYPE)


router = Router(path="/", route_handlers=[scrape])
