"""POST /api/facts/extract: run fact extraction for the caller now."""

from litestar import Request, Router, post
from litestar.di import NamedDependency

from chatsvc.extraction import FactExtractor


@post(summary="Extract facts from the caller's new messages now", status_code=200)
async def extract_facts(request: Request, extractor: NamedDependency[FactExtractor]) -> dict:
    """200 with counts; an LLM failure is reported in `failed_batches` / `errors`
    (the messages stay unprocessed for the next run), never as a 5xx."""
    result = await extractor.run_user(request.user.id)
    return result.as_json()


router = Router(path="/api/facts/extract", route_handlers=[extract_facts], tags=["facts"])
