"""The upstream LLM: one OpenAI-compatible chat-completions client for chat turns,
fact extraction and knowledge tiers (streaming or whole answers, retries, system-role
folding, JSON mode), and reading its answers (usage, JSON objects)."""

from chatsvc.llm._client import CLOSE_TIMEOUT_SECONDS, LLM, Finish, fold_system
from chatsvc.llm._json import MalformedReply, json_object, json_options
from chatsvc.llm._sse_in import Piece
from chatsvc.llm._tool_calls import ToolCallDelta, ToolCalls, cut_short
from chatsvc.llm._usage import Usage, parse_usage, usage_or_estimate

__all__ = [
    "CLOSE_TIMEOUT_SECONDS",
    "LLM",
    "Finish",
    "MalformedReply",
    "Piece",
    "ToolCallDelta",
    "ToolCalls",
    "Usage",
    "cut_short",
    "fold_system",
    "json_object",
    "json_options",
    "parse_usage",
    "usage_or_estimate",
]
