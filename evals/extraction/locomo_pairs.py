"""LoCoMo observations paired with turns: true pairs (an observation and the turn its
dia id names) and false pairs (the same observation and another turn of that speaker).

Observations are facts LoCoMo's authors wrote about each speaker per session
(`session_N_observation`: {speaker: [[text, dia id or ids], ...]}). Only the
conversations a caller names are read; acceptance conversations are refused.
"""

from __future__ import annotations

import json
import random
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from evals.recall.dates import iso, parse_session_time
from evals.recall.locomo import ACCEPTANCE, dia_id

_MEMBER = "data/multimodal_dialog/locomo10_v2/{n}.json"
_SESSION = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str  # the speaker's own words (a shared photo's caption is not theirs)
    said_at: str | None


@dataclass(frozen=True)
class Pair:
    conversation: int
    speaker: str
    observation: str
    turns: tuple[Turn, ...]
    true: bool


def load(path: Path, number: int) -> dict:
    if number in ACCEPTANCE:
        raise ValueError(f"LoCoMo conversation {number} is kept for acceptance: not read here")
    path = Path(path)
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read(_MEMBER.format(n=number)))
    return json.loads((path / f"{number}.json").read_text(encoding="utf-8"))


def turns(conversation: dict) -> dict[str, Turn]:
    found = {}
    for key, raw_turns in conversation.items():
        session = _SESSION.match(key)
        if not session or not isinstance(raw_turns, list):
            continue
        when = parse_session_time(str(conversation.get(f"{key}_date_time") or ""))
        for raw in raw_turns:
            canonical = dia_id(str(raw.get("dia_id", "")))
            text = str(raw.get("text") or "").strip()
            if canonical and text:
                found[canonical] = Turn(canonical, str(raw.get("speaker", "")), text,
                                        iso(when) if when else None)
    return found


def pairs(conversation: dict, number: int, rng: random.Random) -> tuple[list[Pair], int]:
    """The true and false pairs of one conversation, and how many observations were
    skipped (a dia id naming no turn, or a turn of the other speaker)."""
    by_id = turns(conversation)
    by_speaker: dict[str, list[Turn]] = {}
    for turn in by_id.values():
        by_speaker.setdefault(turn.speaker, []).append(turn)
    found, skipped = [], 0
    for key, observed in conversation.items():
        if not key.endswith("_observation") or not isinstance(observed, dict):
            continue
        for speaker, items in observed.items():
            for text, ids in items:
                cited = tuple(by_id[i] for i in _ids(ids) if i in by_id)
                if not cited or any(t.speaker != speaker for t in cited):
                    skipped += 1
                    continue
                found.append(Pair(number, speaker, text, cited, True))
                others = [t for t in by_speaker[speaker] if t not in cited]
                found.append(Pair(number, speaker, text, (rng.choice(others),), False))
    return found, skipped


def _ids(value) -> list[str]:
    items = value if isinstance(value, list) else re.split(r"[,;]", str(value))
    return [one for one in (dia_id(str(item)) for item in items) if one]
