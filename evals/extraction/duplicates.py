"""How close (cosine distance, bundled e5-small) a re-extracted fact is to the stored one,
against how close two different facts of one person are: the ground for
CHATSVC_FACT_DUPLICATE_DISTANCE.

Different facts: each LoCoMo observation and its nearest other observation of the same
speaker (the pairs a threshold must keep apart). The same fact: each observation and
rewrites extraction makes of it that an exact-text match misses (case, closing period,
the speaker's name dropped, an article swapped).

    python -m evals.extraction.duplicates --locomo ../shared/data/locomo10.zip \
        --conversations 26,30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path

import numpy as np

from chatsvc.embeddings import LocalEmbedder
from evals._machine import describe
from evals.extraction import locomo_pairs

RESULTS = Path(__file__).resolve().parents[1] / "results" / "fact_duplicates.json"


def observations(zip_path: Path, conversation: str) -> dict[str, list[str]]:
    """Each speaker's observations (the acceptance conversations are refused by `load`)."""
    found: dict[str, list[str]] = {}
    for key, value in locomo_pairs.load(zip_path, int(conversation)).items():
        if key.endswith("_observation") and isinstance(value, dict):
            for speaker, items in value.items():
                found.setdefault(speaker, []).extend(text for text, *_ in items)
    return found


def rewrites(fact: str, speaker: str) -> list[str]:
    """What a second extraction of the same fact may look like, short of a paraphrase."""
    plain = fact.rstrip(".")
    nameless = re.sub(rf"^{re.escape(speaker)}('s)?\s+", "", fact).strip()
    swapped = re.sub(r"\bthe\b", "a", fact, count=1) if " the " in fact else fact + " now"
    return [plain, plain.lower(), nameless[:1].upper() + nameless[1:], swapped]


def unit(vectors) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


async def measure(zip_path: Path, conversations: list[str]) -> dict:
    embedder = LocalEmbedder()
    nearest_other, same_fact = [], []
    started = time.perf_counter()
    for conversation in conversations:
        for speaker, facts in observations(zip_path, conversation).items():
            base = unit(await embedder.embed_documents(facts))
            similarity = base @ base.T
            np.fill_diagonal(similarity, -1)
            nearest_other.extend((1 - similarity.max(axis=1)).tolist())
            for n, fact in enumerate(facts):
                variants = unit(await embedder.embed_documents(rewrites(fact, speaker)))
                same_fact.extend((1 - variants @ base[n]).tolist())
    return {"conversations": conversations, "seconds": round(time.perf_counter() - started, 1),
            "different_facts_nearest": _summary(nearest_other),
            "same_fact_rewrites": _summary(same_fact), "machine": describe()}


def _summary(distances: list[float]) -> dict:
    values = np.asarray(distances)
    return {"n": len(values), **{f"p{q}": round(float(np.percentile(values, q)), 4)
                                 for q in (1, 5, 50, 95, 99)},
            "min": round(float(values.min()), 4), "max": round(float(values.max()), 4),
            "below": {t: round(float((values <= t).mean()), 4)
                      for t in (0.02, 0.03, 0.04, 0.05, 0.06, 0.08)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--conversations", default="26,30")
    args = parser.parse_args()
    result = asyncio.run(measure(args.locomo, args.conversations.split(",")))
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
