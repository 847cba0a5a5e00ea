"""The `messages` of a /v1 request, read into the history chatsvc assembles.

Text messages of any role, assistant messages that called tools and the tools'
results; user messages may hold image parts too (chatsvc.routes._images). Tool calls
and image parts are rebuilt in one shape, so the same conversation sent again
reaches the upstream as the same bytes.
"""

from __future__ import annotations

from chatsvc._settings import Settings
from chatsvc.images import Image
from chatsvc.routes import _images
from chatsvc.routes import _validate as check
from context import Message

ROLES = {"system": "system", "developer": "system", "user": "user",
         "assistant": "assistant", "tool": "tool"}
CALL_SHAPE = '{"id", "type": "function", "function": {"name", "arguments": a JSON string}}'


def _text(content, field: str) -> str:
    if isinstance(content, str):
        return check.plain(field, content)
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in content
    ):
        return check.plain(field, "".join(p["text"] for p in content))
    raise check.bad(field, "content must be a string or a list of text parts")


def _user_content(content, field: str, settings: Settings) -> tuple[str, tuple[Image, ...]]:
    """A user message's text (its text parts, joined) and its images, in order."""
    if not isinstance(content, list):
        return _text(content, field), ()
    kinds = ("text", "image_url")
    if not all(isinstance(p, dict) and p.get("type") in kinds for p in content):
        raise check.bad(field, "content must be a string or a list of text and "
                               "image_url parts")
    texts = [p for p in content if p["type"] == "text"]
    images = [(f"{field}.content[{i}].image_url", p.get("image_url"))
              for i, p in enumerate(content) if p["type"] == "image_url"]
    return _text(texts, field), _images.images(images, f"{field}.content", settings)


def _tool_call(call, field: str) -> dict:
    function = call.get("function") if isinstance(call, dict) else None
    if not (isinstance(function, dict) and isinstance(call.get("id"), str) and call["id"]
            and call.get("type", "function") == "function"
            and isinstance(function.get("name"), str)
            and isinstance(function.get("arguments"), str)):
        raise check.bad(field, f"must be {CALL_SHAPE}")
    for part, value in (("id", call["id"]), ("function.name", function["name"]),
                        ("function.arguments", function["arguments"])):
        check.plain(f"{field}.{part}", value)  # forwarded upstream like the content
    return {"id": call["id"], "type": "function",
            "function": {"name": function["name"], "arguments": function["arguments"]}}


def _message(item: dict, field: str, unanswered: set[str],
             settings: Settings) -> tuple[Message, tuple[Image, ...]]:
    """One message. `unanswered`: the calls of the assistant message just before, not
    yet answered; a tool result must answer one of them, as providers require (else
    the upstream refuses the request, after the searches and the prompt were made)."""
    role = ROLES[item["role"]]
    calls = item.get("tool_calls") if role == "assistant" else None
    call_id = item.get("tool_call_id")
    if role == "tool":
        if not (isinstance(call_id, str) and call_id in unanswered):
            raise check.bad(f"{field}.tool_call_id", "must be the id of a call, not yet "
                            "answered, of the assistant message before the tool results")
        unanswered.discard(call_id)
        return Message(role, _text(item.get("content"), field), tool_call_id=call_id), ()
    unanswered.clear()
    if role == "user":
        text, images = _user_content(item.get("content"), field, settings)
        return Message(role, text, images=tuple(i.part() for i in images)), images
    if calls is None:
        return Message(role, _text(item.get("content"), field)), ()
    if not isinstance(calls, list) or not calls:
        raise check.bad(f"{field}.tool_calls", "must be a non-empty list")
    parsed = tuple(_tool_call(c, f"{field}.tool_calls[{i}]") for i, c in enumerate(calls))
    unanswered.update(call["id"] for call in parsed)
    if len(unanswered) < len(parsed):
        raise check.bad(f"{field}.tool_calls", "ids must be unique")
    content = item.get("content")
    return Message(role, "" if content is None else _text(content, field),
                   tool_calls=parsed), ()


def parse_messages(raw, settings: Settings
                   ) -> tuple[list[Message], str, list[Message], tuple[Image, ...]]:
    """(history, current user message, what followed it: tool calls and their results,
    the current message's images). Earlier messages keep their images as parts."""
    if not isinstance(raw, list) or not raw:
        raise check.bad("messages", "must be a non-empty list")
    parsed, images, unanswered = [], [], set()
    for index, item in enumerate(raw):
        field = f"messages[{index}]"
        role = item.get("role") if isinstance(item, dict) else None
        if not (isinstance(role, str) and role in ROLES):
            raise check.bad(f"{field}.role", f"must be one of {', '.join(ROLES)}")
        message, found = _message(item, field, unanswered, settings)
        parsed.append(message)
        images.append(found)
    last_user = max((i for i, m in enumerate(parsed) if m.role == "user"), default=None)
    if parsed[-1].role not in ("user", "tool") or last_user is None:
        raise check.bad("messages", "the last message must come from the user or a tool")
    after = parsed[last_user + 1:]
    if any(m.role not in ("tool", "assistant") or (m.role == "assistant" and not m.tool_calls)
           for m in after):
        raise check.bad("messages", "after the last user message only tool calls and "
                                    "their results may follow")
    return parsed[:last_user], parsed[last_user].content, after, images[last_user]
