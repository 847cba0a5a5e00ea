"""Optional AI dedup of a fact sheet (cross-category contradictions and repeats).

Off by default (`CHATSVC_FACT_SHEET_AI_DEDUP`): the design brief measured ~8800
output tokens to drop one fact of 60 with a reasoning model. When on, only the
assembled sheet (at most 100 facts) is sent, within `CHATSVC_FACT_SHEET_DEDUP_MAX_TOKENS`
input tokens; a bigger sheet, an LLM failure or an unusable answer skips dedup.
Pure functions: the caller does the LLM call.
"""

from __future__ import annotations

import prompts
from chatsvc.fact_sheet._scoring import SheetEntry
from chatsvc.llm import MalformedReply, json_object
from context.tokens import Tokenizer

# The answer's shape, for servers that constrain output to a schema (json mode "schema").
DROP_SCHEMA = {
    "type": "object",
    "properties": {"drop": {"type": "array", "items": {"type": "string", "maxLength": 8}}},
    "required": ["drop"],
}


def dedup_prompt(entries: list[SheetEntry]) -> tuple[str, dict[str, str]]:
    """The prompt and its ref -> fact id map."""
    refs = {f"f{n}": entry.id for n, entry in enumerate(entries, 1)}
    lines = [f"{ref} [{entry.category}] {entry.fact}" for ref, entry in zip(refs, entries,
                                                                             strict=True)]
    return prompts.load("fact_sheet_dedup").replace("{{facts}}", "\n".join(lines)), refs


def within_cap(prompt: str, max_tokens: int, tokenizer: Tokenizer) -> bool:
    return tokenizer.count(prompt) <= max_tokens


def parse_drops(text: str, refs: dict[str, str]) -> list[str]:
    """Fact ids to drop, in sheet order; unknown refs are ignored."""
    drop = json_object(text).get("drop", [])
    if not isinstance(drop, list):
        raise MalformedReply("drop must be a list")
    wanted = {item.strip().lower() for item in drop if isinstance(item, str)}
    return [fact_id for ref, fact_id in refs.items() if ref in wanted]
