"""The shipped multi-turn scenarios (scenarios.jsonl, one conversation per line).

Each scenario is one user (name, timezone) with fixtures (facts, memories,
knowledge documents; a fact sheet is generated from the facts before the first
turn) and turns at offsets from its start time. A turn may carry events applied
just before it: `add_facts`, `generate_fact_sheet`, `write_memory`. The
assistant text is what the scripted upstream answers, so replays are exact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

SCENARIOS_PATH = Path(__file__).with_name("scenarios.jsonl")
EVENT_TYPES = ("add_facts", "generate_fact_sheet", "write_memory")


@dataclass(frozen=True)
class Turn:
    offset_seconds: float
    user: str
    assistant: str
    events: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Scenario:
    id: str
    language: str
    kind: str
    user_name: str
    timezone: str
    start: datetime
    facts: tuple[dict, ...]
    memories: tuple[dict, ...]
    docs: tuple[dict, ...]
    turns: tuple[Turn, ...]

    def at(self, turn: Turn) -> datetime:
        return self.start + timedelta(seconds=turn.offset_seconds)


def parse(line: str) -> Scenario:
    data = json.loads(line)
    turns = tuple(Turn(t["offset_seconds"], t["user"], t["assistant"],
                       tuple(t.get("events", ()))) for t in data["turns"])
    for turn in turns:
        for event in turn.events:
            if event["type"] not in EVENT_TYPES:
                raise ValueError(f"scenario {data['id']}: unknown event {event['type']!r}")
    fixtures = data["fixtures"]
    return Scenario(
        id=data["id"], language=data["language"], kind=data["kind"],
        user_name=data["user"]["name"], timezone=data["user"]["timezone"],
        start=datetime.fromisoformat(data["start"]),
        facts=tuple(fixtures["facts"]), memories=tuple(fixtures["memories"]),
        docs=tuple(fixtures["docs"]), turns=turns,
    )


def load(path: Path = SCENARIOS_PATH, *, only: list[str] | None = None,
         limit: int | None = None) -> list[Scenario]:
    """Scenarios in file order; `only` keeps ids starting with any of its prefixes."""
    found = [parse(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if only:
        found = [s for s in found if any(s.id.startswith(prefix) for prefix in only)]
    return found[:limit] if limit else found
