"""The scored fact sheet: pure scoring/assembly (`_scoring`), its generation, and the
optional AI dedup pass (`_dedup`: the prompt and the answer; extraction calls the LLM)."""

from chatsvc.fact_sheet._dedup import DROP_SCHEMA, dedup_prompt, parse_drops, within_cap
from chatsvc.fact_sheet._generate import (
    ContextFacts,
    build_entries,
    context_facts,
    generate,
    save_entries,
    sheet_json,
)
from chatsvc.fact_sheet._scoring import (
    CATEGORIES,
    CATEGORY_LIMITS,
    CATEGORY_WEIGHTS,
    MAX_FACTS,
    RECENT_EXTRACTIONS,
    Candidate,
    SheetEntry,
    assemble,
    build_sheet,
    canonical_json,
    decay_points,
    reference_scores,
    score_facts,
)

__all__ = [
    "CATEGORIES",
    "CATEGORY_LIMITS",
    "CATEGORY_WEIGHTS",
    "DROP_SCHEMA",
    "MAX_FACTS",
    "RECENT_EXTRACTIONS",
    "Candidate",
    "ContextFacts",
    "SheetEntry",
    "assemble",
    "build_entries",
    "build_sheet",
    "canonical_json",
    "context_facts",
    "decay_points",
    "dedup_prompt",
    "generate",
    "parse_drops",
    "reference_scores",
    "save_entries",
    "score_facts",
    "sheet_json",
    "within_cap",
]
