"""Conversations to import: the native body or a ChatGPT export, checked in full first.

`parse` turns a decoded JSON body into (title, messages) pairs, or raises
`InvalidImport` naming the first bad field (`conversations[2].messages[5].role`),
so nothing is written for a bad body. A ChatGPT data export's `conversations.json`
(`"format": "chatgpt"`) is read along its visible branch: from `current_node` up
the `parent` links to the root; system and tool messages and empty ones are skipped.
"""

from __future__ import annotations

from datetime import UTC, datetime

from chatsvc._control import RULE as CONTROL_RULE
from chatsvc._control import has_control
from store.clock import MOMENT_RULE, iso, parse_moment
from store.recall import ImportedMessage

FORMATS = ("native", "chatgpt")
ROLES = ("user", "assistant")
MAX_NAME = 100
MAX_TITLE = 500

Conversation = tuple[str | None, list[ImportedMessage]]


class InvalidImport(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse(body: object, *, max_chars: int) -> list[Conversation]:
    if isinstance(body, list):  # most likely a ChatGPT export's conversations.json, as is
        raise InvalidImport("body", 'is a list: send {"conversations": [...]}, or for a '
                            "ChatGPT export's conversations.json "
                            '{"format": "chatgpt", "conversations": <its list>}')
    if not isinstance(body, dict):
        raise InvalidImport("body", 'must be an object {"conversations": [...]}')
    kind = body.get("format", "native")
    if kind not in FORMATS:
        raise InvalidImport("format", f"must be one of {', '.join(FORMATS)}")
    conversations = body.get("conversations")
    if not isinstance(conversations, list):
        raise InvalidImport("conversations", "must be a list")
    read = _chatgpt if kind == "chatgpt" else _native
    return [read(item, f"conversations[{i}]", max_chars) for i, item in enumerate(conversations)]


def _native(item: object, at: str, max_chars: int) -> Conversation:
    item = _object(item, at)
    messages = item.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidImport(f"{at}.messages", "must be a non-empty list")
    parsed = []
    for j, message in enumerate(messages):
        where = f"{at}.messages[{j}]"
        message = _object(message, where)
        role = message.get("role")
        if role not in ROLES:
            raise InvalidImport(f"{where}.role", "must be user or assistant")
        parsed.append(ImportedMessage(
            role, _content(message.get("content"), f"{where}.content", max_chars),
            name=_optional_text(message.get("name"), f"{where}.name", MAX_NAME),
            created_at=_time(message.get("created_at"), f"{where}.created_at")))
    return _optional_text(item.get("title"), f"{at}.title", MAX_TITLE), parsed


def _chatgpt(item: object, at: str, max_chars: int) -> Conversation:
    item = _object(item, at)
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        raise InvalidImport(f"{at}.mapping", "must be an object of nodes")
    title = item.get("title")
    title = _optional_text(title if title else None, f"{at}.title", MAX_TITLE)
    started = _epoch(item.get("create_time"), f"{at}.create_time")
    messages = []
    for node_id in _branch(mapping, item.get("current_node"), at):
        where = f"{at}.mapping.{node_id}.message"
        message = mapping[node_id].get("message") if isinstance(mapping[node_id], dict) else None
        if not isinstance(message, dict):
            continue  # the root, or a node without a message
        role = _object(message.get("author") or {}, f"{where}.author").get("role")
        parts = _object(message.get("content") or {}, f"{where}.content").get("parts") or []
        if not isinstance(parts, list):
            raise InvalidImport(f"{where}.content.parts", "must be a list")
        text = "\n".join(p for p in parts if isinstance(p, str)).strip()
        if role not in ROLES or not text:
            continue  # system prompts, tool calls, images without text
        at_time = _epoch(message.get("create_time"), f"{where}.create_time") or started
        messages.append(ImportedMessage(role, _content(text, f"{where}.content", max_chars),
                                        created_at=at_time))
    return title, messages


def _branch(mapping: dict, current: object, at: str) -> list[str]:
    """Node ids of the visible branch, root first."""
    if not isinstance(current, str) or current not in mapping:
        raise InvalidImport(f"{at}.current_node", "must name a node of mapping")
    chain: list[str] = []
    seen: set[str] = set()  # a set: the chain of a large export is long
    while current is not None:
        if not isinstance(current, str) or current not in mapping:
            raise InvalidImport(f"{at}.mapping.{chain[-1]}.parent", "names no node of mapping")
        if current in seen:
            raise InvalidImport(f"{at}.mapping", "parent links form a cycle")
        chain.append(current)
        seen.add(current)
        node = mapping[current]
        current = node.get("parent") if isinstance(node, dict) else None
    return chain[::-1]


def _object(value: object, at: str) -> dict:
    if not isinstance(value, dict):
        raise InvalidImport(at, "must be an object")
    return value


def _content(value: object, at: str, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidImport(at, "must be a non-empty string")
    if len(value) > max_chars:
        raise InvalidImport(at, f"longer than {max_chars} characters")
    return _plain(value, at)


def _optional_text(value: object, at: str, max_chars: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > max_chars:
        raise InvalidImport(at, f"must be a string of 1-{max_chars} characters")
    return _plain(value.strip(), at)


def _plain(value: str, at: str) -> str:
    if has_control(value):
        raise InvalidImport(at, CONTROL_RULE)
    return value


def _time(value: object, at: str) -> str | None:
    """An ISO-8601 time as stored (UTC, microseconds, Z); a time without zone is UTC."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return iso(parse_moment(value))
    except ValueError:
        pass
    raise InvalidImport(at, MOMENT_RULE)


def _epoch(value: object, at: str) -> str | None:
    """ChatGPT's times: seconds since the epoch (or null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 4e9:
        raise InvalidImport(at, "must be seconds since 1970 or null")
    return iso(datetime.fromtimestamp(value, UTC))
