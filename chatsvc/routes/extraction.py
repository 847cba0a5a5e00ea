"""POST /api/facts/extract: run fact extraction for the caller now."""

from litestar import Request, post


@post("/api/facts/extract", summary="Extract facts from the caller's new messages now",
      tags=["facts"], status_code=200)
async def extract_facts(request: Request) -> dict:
    """200 with counts; an LLM failure is reported in `failed_batches` / `errors`
    (the messages stay unprocessed for the next run), never as a 5xx."""
    result = await request.app.state.services.extractor.run_user(request.user.id)
    return result.as_json()
