"""GET /health: four dependency checks, never 5xx for a degraded dependency."""

from litestar import Request, get


@get("/health", summary="Dependency health", tags=["health"])
async def health(request: Request) -> dict:
    return await request.app.state.services.health.report()


@get("/api/me", summary="The caller", tags=["users"])
async def me(request: Request) -> dict:
    user = request.user
    return {"id": user.id, "name": user.name, "is_admin": user.is_admin,
            "timezone": user.timezone}
