"""LongMemEval questions (Wu et al., ICLR 2025) as haystacks for the recall harness.

The format is that of the released `longmemeval_s*.json` / `longmemeval_oracle.json`
(optionally gzipped): a list of questions `{"question_id", "question_type", "question",
"question_date", "haystack_dates": ["2023/05/20 (Sat) 02:21", ...],
"haystack_session_ids", "haystack_sessions": [[{"role", "content", "has_answer"?}]],
"answer_session_ids"}`. Each question brings its own haystack: it is imported as its own
user, one conversation per session (titled with the session id), its turns 10 s apart
from the session's date. A turn's id is `<session id>#<n>`; the turns marked
`has_answer` are its evidence, `answer_session_ids` the sessions that hold it.

The acceptance set (`data/longmemeval_heldout_ids.txt`) is skipped unless asked for:
it is checked from outside and never developed on.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import zip_longest
from pathlib import Path

from evals.recall.dates import iso
from evals.recall.locomo import CONTROL, Problems
from evals.recall.mapping import TURN_STEP, UNDATED_GAP

HELDOUT_IDS = Path(__file__).parent / "data" / "longmemeval_heldout_ids.txt"
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "knowledge-update", "temporal-reasoning")
_WHEN = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*$")
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Haystack:
    """One question with the sessions it is asked over."""

    question_id: str
    question_type: str
    question: str
    sessions: list[tuple[dict, list[str]]]  # (import conversation, its turns' ids)
    answer_sessions: frozenset[str]
    evidence: frozenset[str]  # ids of the turns marked has_answer
    asked_at: str | None = None  # question_date, ISO UTC (None: not readable)

    @property
    def turn_count(self) -> int:
        return sum(len(ids) for _, ids in self.sessions)


def is_longmemeval(raw: object) -> bool:
    return isinstance(raw, list) and bool(raw) and isinstance(raw[0], dict) \
        and "haystack_sessions" in raw[0]


def read_json(path: Path) -> object:
    """A JSON file, gzipped (`.gz`) or not."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def heldout_ids(path: Path = HELDOUT_IDS) -> frozenset[str]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def parse_date(text: str) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' -> that moment as UTC (the files carry no zone)."""
    found = _WHEN.match(text or "")
    if not found:
        return None
    year, month, day, hour, minute = (int(part) for part in found.groups())
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError:
        return None


def select(raw: list[dict], problems: Problems, *, types: Collection[str] | None = None,
           questions: int | None = None, include_heldout: bool = False,
           heldout: frozenset[str] | None = None, others: int | None = None
           ) -> list[Haystack]:
    """The usable questions of `types` (default all), the held-out ones left out unless
    `include_heldout`; with `questions`, the first that many taken in turn from each type
    (so a small run still covers every type); with `others`, each haystack cut to its
    answer sessions and the first `others` of the rest (a quick run, not the benchmark)."""
    heldout = heldout_ids() if heldout is None else heldout
    kept: dict[str, list[Haystack]] = {}
    for item in raw:
        question_id = str(item.get("question_id", ""))
        if question_id in heldout and not include_heldout:
            problems.note("held-out question (skipped; --include-heldout)", question_id)
            continue
        if types and item.get("question_type") not in types:
            continue
        if (haystack := parse_question(item, problems, others)) is not None:
            kept.setdefault(haystack.question_type, []).append(haystack)
    in_turn = [h for row in zip_longest(*kept.values()) for h in row if h is not None]
    return in_turn[:questions]


def parse_question(item: dict, problems: Problems, others: int | None = None
                   ) -> Haystack | None:
    question_id = str(item.get("question_id", ""))
    answers = frozenset(str(s) for s in item.get("answer_session_ids") or [])
    evidence: set[str] = set()
    sessions = []
    previous_end = _EPOCH - UNDATED_GAP
    dated = zip_longest(item.get("haystack_session_ids") or [], item.get("haystack_dates") or [],
                        item.get("haystack_sessions") or [])
    for session_id, date, turns in dated:
        if others is not None and str(session_id) not in answers:
            if others <= 0:
                continue
            others -= 1
        start = parse_date(str(date or ""))
        if start is None:
            problems.note("session date not readable (placed after the previous one)",
                          f"{question_id} {session_id}: {date!r}")
            start = previous_end + UNDATED_GAP
        messages, ids = [], []
        for n, turn in enumerate(turns or []):
            text = CONTROL.sub("", str(turn.get("content") or "")).strip()
            if not text or turn.get("role") not in ("user", "assistant"):
                problems.note("turn without text or role (skipped)", f"{question_id} {session_id}")
                continue
            turn_id = f"{session_id}#{n}"
            messages.append({"role": turn["role"], "content": text,
                             "created_at": iso(start + len(messages) * TURN_STEP)})
            ids.append(turn_id)
            if turn.get("has_answer"):
                evidence.add(turn_id)
        previous_end = start + len(messages) * TURN_STEP
        if messages:
            sessions.append(({"title": str(session_id), "messages": messages}, ids))
    if not answers or not sessions or not str(item.get("question") or "").strip():
        # Abstention questions (`_abs`) have no answer session to find.
        problems.note("question without answer sessions or haystack (skipped)", question_id)
        return None
    asked = parse_date(str(item.get("question_date") or ""))
    return Haystack(question_id, str(item.get("question_type", "")),
                    str(item["question"]).strip(), sessions, answers, frozenset(evidence),
                    asked and iso(asked))


def session_of(turn_id: str) -> str:
    return turn_id.rsplit("#", 1)[0]
