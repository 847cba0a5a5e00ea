"""JSON answers: how to ask for one, and how to read one back.

Small models wrap JSON in code fences or a sentence; the object is read from the
first `{` to the last `}`. What is not a JSON object raises MalformedReply, whose
message says why (extraction sends it back in its repair request).
"""

from __future__ import annotations

import json
import re

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class MalformedReply(ValueError):
    """The LLM's answer is not the JSON object asked for; the message says why."""


def json_options(mode: str, schema: dict | None = None) -> dict:
    """Request options asking for a JSON object, by CHATSVC_EXTRACT_JSON_MODE: "json_object"
    (OpenAI, Moonshot), "schema" (llama.cpp's json_object + `schema`, grammar-constrained;
    plain json_object without a schema) or "off" (nothing)."""
    if mode == "off":
        return {}
    if mode == "schema" and schema is not None:
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {"response_format": {"type": "json_object"}}


def json_object(text: str) -> dict:
    """The JSON object in `text`, or MalformedReply."""
    body = _FENCE.sub("", (text or "").strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise MalformedReply("no JSON object found")
    try:
        # strict=False: a grammar-constrained small model (Gemma 270M) writes raw line
        # breaks inside strings; the object is still what it meant.
        data = json.loads(body[start : end + 1], strict=False)
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"invalid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict):
        raise MalformedReply("the answer must be a JSON object")
    return data
