"""GET /health: four dependency checks, never 5xx for a degraded dependency. GET /api/me."""

from litestar import Request, Router, get
from litestar.di import NamedDependency

from chatsvc._health import HealthChecker


@get("/health", summary="Dependency health", tags=["health"])
async def health(health: NamedDependency[HealthChecker]) -> dict:
    return await health.report()


@get("/api/me", summary="The caller", tags=["users"])
async def me(request: Request) -> dict:
    user = request.user
    return {"id": user.id, "name": user.name, "is_admin": user.is_admin,
            "timezone": user.timezone}


router = Router(path="/", route_handlers=[health, me])
