"""OpenAPI corrections Litestar cannot infer from a handler's signature.

The chat routes answer `text/event-stream` when streaming and JSON otherwise;
/v1 errors use OpenAI's shape, not Litestar's. Without these the published
schema contradicts the service (schemathesis' content-type and response-schema
checks fail on it).
"""

from __future__ import annotations

from dataclasses import dataclass

from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, Schema

# One server-sent event (stream: true), as OpenAPI 3.2 describes SSE items.
_SSE = OpenAPIMediaType(schema=Schema(
    type=OpenAPIType.OBJECT, description="One server-sent event; `data` is JSON text",
    properties={"event": Schema(type=OpenAPIType.STRING), "data": Schema(type=OpenAPIType.STRING),
                "id": Schema(type=OpenAPIType.STRING), "retry": Schema(type=OpenAPIType.INTEGER)},
))
_OPENAI_ERROR = Schema(
    type=OpenAPIType.OBJECT, required=["error"],
    properties={"error": Schema(
        type=OpenAPIType.OBJECT, required=["message", "type"],
        properties={"message": Schema(type=OpenAPIType.STRING),
                    "type": Schema(type=OpenAPIType.STRING),
                    "code": Schema(one_of=[Schema(type=OpenAPIType.STRING),
                                           Schema(type=OpenAPIType.NULL)])},
    )},
)


@dataclass
class StreamingOperation(Operation):
    """200 is JSON or an SSE stream."""

    def __post_init__(self) -> None:
        ok = (self.responses or {}).get("200")
        if ok is not None and ok.content is not None:
            ok.content["text/event-stream"] = _SSE


@dataclass
class OpenAIStreamingOperation(StreamingOperation):
    """...and every error is `{"error": {...}}`."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for status, response in (self.responses or {}).items():
            if status.startswith(("4", "5")) and response.content:
                response.content = {"application/json": OpenAPIMediaType(schema=_OPENAI_ERROR)}
