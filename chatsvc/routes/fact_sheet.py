"""GET /api/fact-sheet and POST /api/fact-sheet/generate (the caller's own sheet)."""

from litestar import Request, get, post

from chatsvc._threads import in_thread
from chatsvc.fact_sheet import sheet_json


@get("/api/fact-sheet", summary="The caller's latest fact sheet", tags=["facts"])
async def latest_sheet(request: Request) -> dict:
    sheets = request.app.state.services.fact_sheets
    return sheet_json(await in_thread(sheets.latest, request.user.id))


@post("/api/fact-sheet/generate", summary="Regenerate the caller's fact sheet now",
      tags=["facts"], status_code=201)
async def generate_sheet(request: Request) -> dict:
    extractor = request.app.state.services.extractor
    return sheet_json(await extractor.regenerate_sheet(request.user.id))
