"""The two inputs: the adversarial set (JSON Lines) and LoCoMo conversations with their
per-session observations, each made into import bodies for the HTTP API.

LoCoMo ships one JSON per conversation in a zip (`data/multimodal_dialog/locomo10_v2/
<N>.json`): the `evals.recall` format's `conversation` object plus
`session_N_observation` = {speaker: [[fact, dia id(s)], ...]}. Conversations in
`ACCEPTANCE` are kept for acceptance runs: they are refused unless asked for.
"""

from __future__ import annotations

import dataclasses
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from evals.recall import mapping
from evals.recall.locomo import ACCEPTANCE, Problems, Sample, dia_id, parse_sample

IMPORT_BYTES = 4_000_000  # per import request, under the server's 8 MB
_MEMBER = "data/multimodal_dialog/locomo10_v2/{}.json"
IMPORTABLE_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Adversarial:
    id: str
    lang: str
    kind: str
    messages: tuple[dict, ...]
    supported: tuple[str, ...]

    @property
    def is_injection(self) -> bool:
        return "inject" in self.kind

    def batch(self) -> mapping.Batch:
        """One import request: the conversation, its messages in order (roles the import
        does not take, such as system, left out: see `skipped`)."""
        kept = [{"role": m["role"], "content": m["content"]} for m in self.messages
                if m["role"] in IMPORTABLE_ROLES]
        labels = [f"m{n}" for n in range(1, len(kept) + 1)]
        return mapping.batches([({"title": self.id, "messages": kept}, labels)],
                               IMPORT_BYTES)[0]

    @property
    def skipped(self) -> int:
        return sum(m["role"] not in IMPORTABLE_ROLES for m in self.messages)


def load_adversarial(path: Path) -> list[Adversarial]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [Adversarial(str(r["id"]), str(r["lang"]), str(r["kind"]), tuple(r["messages"]),
                        tuple(r.get("supported") or ())) for r in rows]


@dataclass(frozen=True)
class Observation:
    speaker: str
    text: str
    dia_ids: frozenset[str]
    session: int


@dataclass(frozen=True)
class Locomo:
    number: int
    sample: Sample
    observations: tuple[Observation, ...]

    def of(self, speaker: str) -> list[Observation]:
        return [o for o in self.observations if o.speaker == speaker]

    def batches(self, problems: Problems) -> list[mapping.Batch]:
        return mapping.batches(mapping.conversations(self.sample, problems), IMPORT_BYTES)


def load_locomo(archive: Path, number: int, problems: Problems, *, sessions: int | None = None,
                acceptance: bool = False) -> Locomo:
    """Conversation `number` of the zip, cut to its first `sessions` sessions."""
    if number in ACCEPTANCE and not acceptance:
        raise ValueError(f"LoCoMo conversation {number} is kept for acceptance runs "
                         "(pass --acceptance to use it)")
    with zipfile.ZipFile(archive) as bundle:
        raw = json.loads(bundle.read(_MEMBER.format(number)))
    sample = parse_sample({"sample_id": f"conv-{number}", "conversation": raw}, number,
                          problems)
    sample = dataclasses.replace(sample, sessions=sample.sessions[:sessions])
    kept = {s.number for s in sample.sessions}
    observations = tuple(o for n in sorted(kept) for o in _observations(raw, n))
    return Locomo(number, sample, observations)


def _observations(raw: dict, session: int) -> list[Observation]:
    found = []
    for speaker, items in (raw.get(f"session_{session}_observation") or {}).items():
        for item in items:
            text, ids = item[0], item[1] if len(item) > 1 else []
            ids = ids if isinstance(ids, list) else [ids]
            pieces = [p for one in ids for p in re.split(r"[;,]", str(one))]  # "D1:3; D1:5"
            canonical = frozenset(c for c in map(dia_id, pieces) if c)
            found.append(Observation(speaker, str(text), canonical, session))
    return found
