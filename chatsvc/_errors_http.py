"""Error responses: Litestar's JSON shape on /api, OpenAI's shape on /v1.

No stack trace or internal message reaches a client; 5xx are logged here.
"""

from __future__ import annotations

import logging

from litestar import Request, Response
from litestar.exceptions import HTTPException, SerializationException, ValidationException

from chatsvc._errors import (
    DatabaseBusy,
    EmbeddingError,
    InvalidAccount,
    InvalidFact,
    InvalidMemory,
    NotFound,
    TooManyStreams,
    TurnInProgress,
    UserExists,
    VectorUnavailable,
)

log = logging.getLogger("chatsvc.http")

# A turn takes seconds: retrying sooner than this only meets the limit again.
STREAM_RETRY_AFTER_SECONDS = 2

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def error_response(request: Request, status: int, detail: str, extra=None) -> Response:
    if request.url.path.startswith("/v1/"):
        fallback = "server_error" if status >= 500 else "invalid_request_error"
        kind = _OPENAI_TYPES.get(status, fallback)
        body = {"error": {"message": detail, "type": kind, "code": str(status)}}
    else:
        body = {"status_code": status, "detail": detail}
        if extra:
            body["extra"] = extra
    return Response(body, status_code=status)


def _http_exception(request: Request, exc: HTTPException) -> Response:
    if isinstance(exc.__cause__, SerializationException):
        # Litestar's 400 for a body its JSON parser refused: name the body, as the import
        # route and the UTF-8 and depth errors do (it said only the parser's message).
        return _bad_body(request, exc.detail)
    detail = exc.detail
    extra = exc.extra if isinstance(exc, ValidationException) else None
    if isinstance(exc, ValidationException) and isinstance(extra, list) and extra:
        # Name the field(s) in the detail itself: clients often show only `detail`.
        keys = sorted({str(item.get("key")) for item in extra if isinstance(item, dict)})
        if keys:
            detail = f"invalid value for {', '.join(keys)}: {extra[0].get('message', detail)}"
    response = error_response(request, exc.status_code, detail, extra)
    response.headers.update(exc.headers or {})  # e.g. a 405's Allow
    return response


def _not_found(request: Request, exc: NotFound) -> Response:
    return error_response(request, 404, "not found")


def _invalid_memory(request: Request, exc: InvalidMemory) -> Response:
    return error_response(request, 400, str(exc))


def _invalid_account(request: Request, exc: InvalidAccount) -> Response:
    return error_response(request, 400, str(exc), [{"key": exc.field, "message": str(exc)}])


def _user_exists(request: Request, exc: UserExists) -> Response:
    return error_response(request, 409, str(exc))


def _invalid_fact(request: Request, exc: InvalidFact) -> Response:
    return error_response(request, 400, str(exc), [{"key": exc.field, "message": str(exc)}])


def _turn_in_progress(request: Request, exc: TurnInProgress) -> Response:
    return error_response(
        request, 409, "the previous turn of this conversation has not finished: wait for its "
        "answer (or stop its stream) and send the message again",
        {"code": "turn_in_progress", "conversation_id": exc.conversation_id},
    )


def _too_many_streams(request: Request, exc: TooManyStreams) -> Response:
    response = error_response(request, 429, str(exc), {"code": "too_many_streams"})
    response.headers["Retry-After"] = str(STREAM_RETRY_AFTER_SECONDS)
    return response


def _unavailable(request: Request, exc: Exception) -> Response:
    return error_response(request, 503, f"search unavailable: {exc}")


def _busy(request: Request, exc: DatabaseBusy) -> Response:
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    response = error_response(request, 503, f"{exc}; retry shortly")
    response.headers["Retry-After"] = "1"
    return response


def _bad_body(request: Request, problem: str, message: str | None = None) -> Response:
    """400 naming the body: `problem` in the detail, `message` (default: the same) in extra."""
    return error_response(request, 400, f"invalid value for body: {problem}",
                          [{"key": "body", "message": message or problem}])


def _not_utf8(request: Request, exc: UnicodeDecodeError) -> Response:
    # Litestar decodes JSON bodies without catching this: it is the client's bytes.
    return _bad_body(request, "not valid UTF-8", str(exc))


def _too_deep(request: Request, exc: RecursionError) -> Response:
    # msgspec gives up on JSON nested past its depth limit: the client's bytes, not a bug.
    if "deserializing" not in str(exc):
        return _internal(request, exc)
    return _bad_body(request, "JSON nested too deeply")


def _internal(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(request, 500, "internal error; see the server log")


# In the order of the tree in chatsvc._errors; Litestar picks the nearest class.
EXCEPTION_HANDLERS = {
    HTTPException: _http_exception,
    UnicodeDecodeError: _not_utf8,
    RecursionError: _too_deep,
    # ChatsvcError: any embedding failure (down, model not pulled, bad answer) is a
    # degraded dependency for the caller, not a server bug.
    EmbeddingError: _unavailable,
    InvalidMemory: _invalid_memory,
    InvalidAccount: _invalid_account,
    TooManyStreams: _too_many_streams,
    # StoreError
    NotFound: _not_found,
    TurnInProgress: _turn_in_progress,
    DatabaseBusy: _busy,
    VectorUnavailable: _unavailable,
    InvalidFact: _invalid_fact,
    UserExists: _user_exists,
    Exception: _internal,
}
