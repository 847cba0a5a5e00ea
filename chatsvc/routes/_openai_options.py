"""The request options /v1 passes through to the upstream, checked first.

Each is checked against OpenAI's rules here, so a client's mistake is its own 400
rather than the upstream's refusal relayed as a 502.
"""

from __future__ import annotations

import re

from chatsvc.routes import _validate as check

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _number(low: float, high: float):
    def valid(value) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
        return None if low <= value <= high else f"must be between {low} and {high}"
    return valid


def _integer(low: int):
    def valid(value) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        return None if value >= low else f"must be at least {low}"
    return valid


def _stop(value) -> str | None:
    if isinstance(value, str) or (isinstance(value, list) and value
                                  and all(isinstance(item, str) for item in value)):
        return None
    return "must be a string or a non-empty list of strings"


def _boolean(value) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _tool(tool) -> str | None:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict) or tool.get("type") != "function":
        return 'must be {"type": "function", "function": {"name", "description", "parameters"}}'
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        return "function.name must be 1-64 letters, digits, underscores or dashes"
    if not isinstance(function.get("description", ""), str):
        return "function.description must be a string"
    if not isinstance(function.get("parameters", {}), dict):
        return "function.parameters must be a JSON Schema object"
    return None


def _tools(value) -> str | None:
    if not isinstance(value, list) or not value:
        return "must be a non-empty list of function tools"
    for index, tool in enumerate(value):
        if (problem := _tool(tool)) is not None:
            return f"item {index}: {problem}"
    return None


def _tool_choice(value) -> str | None:
    if value in ("none", "auto", "required"):
        return None
    function = value.get("function") if isinstance(value, dict) else None
    if (isinstance(function, dict) and value.get("type") == "function"
            and isinstance(function.get("name"), str)):
        return None
    return 'must be "none", "auto", "required" or {"type": "function", "function": {"name"}}'


def _response_format(value) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else None
    schema = value.get("json_schema") if isinstance(value, dict) else None
    if kind in ("text", "json_object") or (
            kind == "json_schema" and isinstance(schema, dict)
            and isinstance(schema.get("name"), str)):
        return None
    return ('must be {"type": "text"}, {"type": "json_object"} or '
            '{"type": "json_schema", "json_schema": {"name", "schema"}}')


PASSTHROUGH = {
    "temperature": _number(0, 2), "top_p": _number(0, 1),
    "max_tokens": _integer(1), "max_completion_tokens": _integer(1), "stop": _stop,
    "seed": _integer(-(2**63)), "presence_penalty": _number(-2, 2),
    "frequency_penalty": _number(-2, 2),
    "tools": _tools, "tool_choice": _tool_choice, "parallel_tool_calls": _boolean,
    "response_format": _response_format,
}


TOOL_OPTIONS = ("tools", "tool_choice", "parallel_tool_calls")


def options(data: dict) -> dict:
    """The pass-through options of a request body, each valid (400 naming it if not)."""
    for key, valid in PASSTHROUGH.items():
        if key in data and (problem := valid(data[key])) is not None:
            raise check.bad(key, problem)
    if "tool_choice" in data and "tools" not in data:
        raise check.bad("tool_choice", "is only allowed when tools are given")
    named = _named(data.get("tool_choice"))
    if named is not None and named not in {tool["function"]["name"] for tool in data["tools"]}:
        raise check.bad("tool_choice", f"names {named!r}, which is not in tools")
    return {key: data[key] for key in PASSTHROUGH if key in data}


def _named(choice) -> str | None:
    return choice["function"]["name"] if isinstance(choice, dict) else None


def for_bundled_model(options: dict, model: str) -> dict:
    """`options` as llama.cpp serves a bundled model's tools: it makes a call only when
    `tool_choice` names the tool (a grammar then forces that call) and never chooses
    among tools itself, so a request that leaves the choice to the model is a 400
    rather than an answer that ignores its tools."""
    if "tools" not in options:
        return options
    tools, choice = options["tools"], options.get("tool_choice", "auto")
    if choice == "none":  # no call wanted: the model answers from what it has
        return {key: value for key, value in options.items() if key not in TOOL_OPTIONS}
    if choice == "required" and len(tools) == 1:
        choice = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
    if _named(choice) is None:
        raise check.bad("tool_choice", (
            f"{choice!r} leaves the choice of a tool to the model, which the bundled local "
            f"model {model!r} (llama.cpp) cannot make: name the tool "
            '({"type": "function", "function": {"name": ...}}, or "required" with one tool), '
            'send "none", or set LLM_BASE_URL to an upstream with tool calling'))
    return {**options, "tool_choice": choice}
