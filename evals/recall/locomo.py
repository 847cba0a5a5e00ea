"""LoCoMo-format samples: sessions of turns and questions with evidence turn ids.

The format is that of snap-research/locomo's `locomo10.json`: a list of samples
`{"sample_id", "conversation": {"speaker_a", "speaker_b", "session_N_date_time",
"session_N": [{"speaker", "dia_id", "text", "blip_caption"?}]}, "qa": [{"question",
"answer"?, "evidence": [dia ids], "category"}]}`. Unknown keys are ignored. What does
not fit (evidence that names no turn, "D8:6; D9:17" in one string, turns without
text) is counted in `Problems`, never fatal: the real file has all of these.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# LoCoMo's own numbering in the released file (not the order of the paper's table).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED = (1, 2, 3, 4)  # 5 is adversarial: reported apart, left out of the overall figure
_DIA_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"^session_(\d+)$")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # the API refuses these
# LoCoMo-10's acceptance conversations (their numbers): checked from outside, never
# developed on; every harness that reads LoCoMo refuses or skips them unless asked.
ACCEPTANCE = frozenset({44, 47, 48, 49, 50})


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    date_time: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Sample:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


@dataclass
class Problems:
    """What the file had that could not be used as is: counts and a few examples."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def as_json(self) -> dict:
        # Not dataclasses.asdict: it rebuilds a Counter from (key, count) pairs, which
        # counts the pairs themselves (tuple keys that json cannot write).
        return {"counts": dict(self.counts), "examples": self.examples}

    def note(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < 5:
            shown.append(example)


def dia_id(text: str) -> str | None:
    """The canonical form `D<session>:<turn>` of one dia id, or None."""
    found = _DIA_ID.fullmatch(text.strip())
    return f"D{int(found[1])}:{int(found[2])}" if found else None


def load(path: Path, problems: Problems) -> list[Sample]:
    return samples_of(json.loads(Path(path).read_text(encoding="utf-8")), problems)


def samples_of(raw: list | dict, problems: Problems, *, include_heldout: bool = False
               ) -> list[Sample]:
    """The samples of a parsed file: a list of them, or one alone; the acceptance
    conversations (ACCEPTANCE, as `conv-N`) skipped unless `include_heldout`."""
    items = raw if isinstance(raw, list) else [raw]
    samples = [parse_sample(item, n, problems) for n, item in enumerate(items)]
    held = {f"conv-{number}" for number in ACCEPTANCE}
    for sample in samples:
        if sample.sample_id in held and not include_heldout:
            problems.note("held-out conversation (skipped; --include-heldout)", sample.sample_id)
    return [s for s in samples if include_heldout or s.sample_id not in held]


def parse_sample(item: dict, n: int, problems: Problems) -> Sample:
    sample_id = str(item.get("sample_id", f"sample-{n}"))
    conversation = item["conversation"]
    sessions = _sessions(conversation, sample_id, problems)
    known = {t.dia_id for s in sessions for t in s.turns}
    questions = tuple(
        q for q in (_question(qa, known, sample_id, problems) for qa in item.get("qa", [])) if q
    )
    return Sample(
        sample_id,
        str(conversation["speaker_a"]),
        str(conversation["speaker_b"]),
        sessions,
        questions,
    )


def _sessions(conversation: dict, sample_id: str, problems: Problems) -> tuple[Session, ...]:
    numbers = sorted(int(m[1]) for key in conversation if (m := _SESSION.match(key)))
    sessions = []
    for number in numbers:
        turns = tuple(
            t
            for t in (
                _turn(raw, sample_id, problems) for raw in conversation[f"session_{number}"] or []
            )
            if t
        )
        if turns:
            date_time = str(conversation.get(f"session_{number}_date_time") or "")
            sessions.append(Session(number, date_time, turns))
    return tuple(sessions)


def _turn(raw: dict, sample_id: str, problems: Problems) -> Turn | None:
    canonical = dia_id(str(raw.get("dia_id", "")))
    text = CONTROL.sub("", str(raw.get("text") or "")).strip()
    caption = str(raw.get("blip_caption") or "").strip()
    if caption:  # what LoCoMo's own evaluation shows of a shared photo
        text = f"{text} [shared a photo: {caption}]".strip()
    if canonical is None or not text:
        problems.note("turn without dia id or text (skipped)", f"{sample_id}: {raw!r:.80}")
        return None
    return Turn(canonical, str(raw.get("speaker", "")), text)


def _question(qa: dict, known: set[str], sample_id: str, problems: Problems) -> Question | None:
    evidence = set()
    for item in qa.get("evidence") or []:
        found = [f"D{int(a)}:{int(b)}" for a, b in _DIA_ID.findall(str(item))]
        if not found:
            problems.note("evidence item naming no dia id", f"{sample_id}: {item!r}")
        if len(found) > 1:
            problems.note("several dia ids in one evidence item", f"{sample_id}: {item!r}")
        for one in found:
            if one in known:
                evidence.add(one)
            else:
                problems.note("evidence id not in the conversation", f"{sample_id}: {one}")
    try:
        category = int(qa.get("category"))
    except (TypeError, ValueError):
        category = 0
    text = str(qa.get("question") or "").strip()
    if not evidence or not text or category not in CATEGORIES:
        problems.note(
            "question without usable evidence, text or category (skipped)",
            f"{sample_id}: {text[:60]!r} category {qa.get('category')!r}",
        )
        return None
    return Question(text, category, frozenset(evidence))
