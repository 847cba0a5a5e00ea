"""GET /health: the dependency checks and the start-up warm-up, never 5xx for a degraded
dependency."""

from litestar import Request, Router, get
from litestar.di import NamedDependency

from chatsvc._auth import caller
from chatsvc._health import HealthChecker


@get("/health", summary="Dependency health", tags=["health"])
async def health(request: Request, health: NamedDependency[HealthChecker]) -> dict:
    # No token needed (load balancers probe it); what each check found, which names
    # hosts and models, only for a signed-in caller.
    return await health.report(details=await caller(request) is not None)


router = Router(path="/", route_handlers=[health])
