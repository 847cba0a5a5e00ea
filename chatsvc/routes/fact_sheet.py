"""GET /api/fact-sheet and POST /api/fact-sheet/generate (the caller's own sheet)."""

from litestar import Request, Router, get, post
from litestar.di import NamedDependency

from chatsvc._threads import in_thread
from chatsvc.extraction import FactExtractor
from chatsvc.fact_sheet import sheet_json
from store import FactSheetStore


@get(summary="The caller's latest fact sheet")
async def latest_sheet(request: Request, fact_sheets: NamedDependency[FactSheetStore]) -> dict:
    return sheet_json(await in_thread(fact_sheets.latest, request.user.id))


@post("/generate", summary="Regenerate the caller's fact sheet now", status_code=201)
async def generate_sheet(request: Request, extractor: NamedDependency[FactExtractor]) -> dict:
    return sheet_json(await extractor.regenerate_sheet(request.user.id))


router = Router(path="/api/fact-sheet", route_handlers=[latest_sheet, generate_sheet],
                tags=["facts"])
