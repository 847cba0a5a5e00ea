"""Facts as keys (issue 40, lever 1), measured: LoCoMo conversations imported through
the HTTP API of a fresh `chatsvc serve`, every question searched, then extraction run
with the scripted upstream answering from LoCoMo's own observations of speaker_a (the
user), each quoting the user turns its dia ids name, and every question searched again:
recall without and with fact keys, back to back on the same index.

    python -m evals.recall.fact_keys --locomo ../shared/data/locomo10.zip --conversations 26 30

Writes evals/results/recall_fact_keys.{md,json}. The acceptance conversations are refused
(evals.extraction.datasets).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from evals._machine import describe
from evals.extraction import locomo_pairs
from evals.extraction.answers import Answer, answer
from evals.extraction.client import ExtractionClient
from evals.extraction.datasets import Locomo, load_locomo
from evals.extraction.service import serving
from evals.extraction.shown import Shown
from evals.recall import mapping
from evals.recall.locomo import Problems, Question, parse_sample
from evals.recall.metrics import by_category, latency_ms, score

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODES = ("hybrid", "semantic")


class Observed:
    """The scripted extractor: each of speaker_a's observations once, as a fact quoting
    (whole) the shown user turns its dia ids name."""

    def __init__(self, conversation: Locomo, texts: dict[str, str]) -> None:
        self.by_text = {text.strip(): dia for dia, text in texts.items()}
        self.pending = list(conversation.of(conversation.sample.speaker_a))

    def __call__(self, shown: list[Shown], prompt: str) -> Answer:
        labels = {self.by_text.get(m.text.strip()): m for m in shown if m.role == "user"}
        facts, left = [], []
        for observation in self.pending:
            cited = [labels[d] for d in sorted(observation.dia_ids) if d in labels]
            if not cited:
                left.append(observation)
                continue
            facts.append({"category": "core", "fact": observation.text, "evidence": [
                {"message": m.label, "quote": m.text} for m in cited]})
        self.pending = left
        return answer(facts)


def _texts(conversation: Locomo, problems: Problems) -> dict[str, str]:
    """dia id -> the message text the import stores for it."""
    return {dia: body["content"] for imported, dias in
            mapping.conversations(conversation.sample, problems)
            for body, dia in zip(imported["messages"], dias, strict=True)}


def _questions(zip_path: Path, number: int, problems: Problems) -> tuple[Question, ...]:
    """The conversation's `qa` (datasets.load_locomo reads its turns and observations)."""
    raw = locomo_pairs.load(zip_path, number)
    return parse_sample({"sample_id": f"conv-{number}", "conversation": raw,
                         "qa": raw.get("qa", [])}, number, problems).questions


def _searched(client: ExtractionClient, questions: tuple[Question, ...], ids: dict[str, str],
              mode: str) -> dict:
    rows, seconds = [], []
    for question in questions:
        found = client.search(question.question, mode)
        ranking = [ids[m] for m in found.message_ids if m in ids]
        rows.append((question.category, score(ranking, question.evidence)))
        seconds.append(found.seconds)
    return {"rows": rows, "latency_ms": latency_ms(seconds)}


def measure(zip_path: Path, number: int, log=print) -> dict:
    problems = Problems()
    conversation = load_locomo(zip_path, number, problems)
    extractor = Observed(conversation, _texts(conversation, problems))
    questions = _questions(zip_path, number, problems)
    with serving("scripted", model="", models_dir=Path(), make=extractor) as served, \
            ExtractionClient(served.service.url, served.service.add_user(f"c{number}")) as client:
        ids: dict[str, str] = {}
        started = time.perf_counter()
        for batch in conversation.batches(problems):
            ids.update(mapping.id_map(batch, client.import_batch(batch)))
        client.wait_indexed(timeout=1800)
        indexed_s = time.perf_counter() - started
        without = {mode: _searched(client, questions, ids, mode) for mode in MODES}
        started = time.perf_counter()
        counts = client.extract_all()
        extract_s = time.perf_counter() - started
        facts = client.facts()
        with_keys = {mode: _searched(client, questions, ids, mode) for mode in MODES}
    log(f"conv-{number}: {len(ids)} messages, {len(facts)} facts stored of "
        f"{len(conversation.of(conversation.sample.speaker_a))} observations")
    return {"conversation": number, "messages": len(ids), "questions": len(questions),
            "facts": len(facts),
            "observations": len(conversation.of(conversation.sample.speaker_a)),
            "unplaced_observations": len(extractor.pending),
            "rejected": counts.get("rejected"), "errors": counts.get("errors"),
            "indexed_s": round(indexed_s, 1), "extract_s": round(extract_s, 1),
            "without": without, "with": with_keys}


def _summary(records: list[dict]) -> dict:
    out = {}
    for mode in MODES:
        for side in ("without", "with"):
            rows = [row for r in records for row in r[side][mode]["rows"]]
            out[f"{mode} {side}"] = {
                "by_category": by_category(rows),
                "latency_ms_p50": [r[side][mode]["latency_ms"]["p50"] for r in records]}
    return out


def _markdown(summary: dict, records: list[dict], meta: dict) -> str:
    names = list(next(iter(summary.values()))["by_category"])
    lines = [f"# Conversation search with fact keys (LoCoMo {meta['conversations']})", "",
             f"{meta['when']}, {meta['machine']}, load average {meta['load_before']} before, "
             f"{meta['load_after']} after. Scripted upstream extracting speaker_a's LoCoMo "
             "observations (quoting the turns their dia ids name), bundled e5-small.", "",
             "recall@5 / recall@10 per category:", "",
             "| ranking | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for name, figures in summary.items():
        cells = [f"{figures['by_category'][n]['recall@5']:.3f} / "
                 f"{figures['by_category'][n]['recall@10']:.3f}"
                 if n in figures["by_category"] else "-" for n in names]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| conversation | messages | observations of the user | facts stored | "
              "not placed | rejected | search p50 ms without / with (hybrid) |",
              "|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['conversation']} | {r['messages']} | {r['observations']} | "
                     f"{r['facts']} | {r['unplaced_observations']} | "
                     f"{json.dumps(r['rejected'])} | "
                     f"{r['without']['hybrid']['latency_ms']['p50']} / "
                     f"{r['with']['hybrid']['latency_ms']['p50']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--conversations", type=int, nargs="+", default=[26, 30])
    args = parser.parse_args()
    meta = {"conversations": args.conversations, "machine": describe(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_before": round(os.getloadavg()[0], 1)}
    records = [measure(args.locomo, n) for n in args.conversations]
    meta["load_after"] = round(os.getloadavg()[0], 1)
    summary = _summary(records)
    for row in records:
        for side in ("without", "with"):
            for mode in MODES:
                row[side][mode].pop("rows")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "recall_fact_keys.json").write_text(json.dumps(
        {"meta": meta, "summary": summary, "conversations": records}, indent=2) + "\n")
    (RESULTS / "recall_fact_keys.md").write_text(_markdown(summary, records, meta))
    print(_markdown(summary, records, meta))


if __name__ == "__main__":
    main()
