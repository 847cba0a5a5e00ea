"""evals/results/extraction_quality.{json,md}: every run's figures under its label
("before", "after"), LLM and suite; the records behind them in
extraction_quality_records.json. The markdown file is shared: only its "Extraction
quality" section is rewritten, other sections (the verifier's thresholds) are kept.

    python -m evals.extraction.results    # rebuild the markdown section from the JSON
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
NAME = "extraction_quality"
HEADING = "## Extraction quality"
_NEXT_SECTION = re.compile(r"^## ", re.MULTILINE)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def save(label: str, llm: str, suite: str, figures: dict, records: list, *,
         out: Path = RESULTS) -> Path:
    """Put one suite's figures (and records) in place, then rebuild the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    for name, value in ((f"{NAME}.json", figures), (f"{NAME}_records.json", records)):
        data = _read(out / name)
        data.setdefault(label, {}).setdefault(llm, {})[suite] = value
        _write(out / name, data)
    return write_markdown(_read(out / f"{NAME}.json"), out / f"{NAME}.md")


def write_markdown(results: dict, path: Path) -> Path:
    section = render(results)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start = text.find(HEADING)
    if start < 0:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + section
    else:
        following = _NEXT_SECTION.search(text, start + len(HEADING))
        end = following.start() if following else len(text)
        text = text[:start] + section + ("\n" + text[end:] if following else "")
    path.write_text(text, encoding="utf-8")
    return path


def _runs(results: dict, suite: str):
    for label in sorted(results, key=lambda k: (k != "before", k)):
        for llm, suites in sorted(results[label].items()):
            if suite in suites:
                yield label, llm, suites[suite]


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _rejected(value) -> str:
    if value is None:
        return "n/a"
    return ", ".join(f"{k} {v}" for k, v in sorted(value.items())) or "0"


def _survival(value) -> str:
    return "n/a" if value is None else f"{value['kept']} of {value['proposed']}"


def _meta(meta: dict) -> str:
    cut = "" if meta.get("complete", True) else ", cut short"
    return f"{meta['commit']}, {meta['date']}, load {meta['load']}{cut}"


def render(results: dict) -> str:
    lines = [HEADING, "",
             "Written by `python -m evals.extraction` (docs/evals.md): facts stored through "
             "the HTTP API of a real `chatsvc serve`, matched to reference facts by the "
             "rule below. `n/a`: the service ran without grounded extraction (no "
             "`evidence`, no `rejected`).", ""]
    matchers = {r["meta"]["matcher"] for s in ("junk", "locomo", "scripted")
                for *_, r in _runs(results, s)}
    lines += [f"Matcher: {m}." for m in sorted(matchers)] + [""]
    lines += _junk(results) + _locomo(results) + _scripted(results)
    return "\n".join(lines).rstrip() + "\n"


def _junk(results: dict) -> list[str]:
    runs = list(_runs(results, "junk"))
    if not runs:
        return []
    lines = ["### Junk on the adversarial set", "",
             "A stored fact is junk when it matches none of its conversation's `supported` "
             "entries. Junk rate = conversations with any junk / conversations.", "",
             "| run | LLM | conversations | with junk | junk rate | junk facts / conv. | "
             "instruction facts | facts stored | supported kept | proposed facts kept | rejected | "
             "commit, date, load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, llm, r in runs:
        lines.append(f"| {label} | {llm} | {r['conversations']} | "
                     f"{r['conversations_with_junk']} | {_pct(r['junk_rate'])} | "
                     f"{r['junk_facts_per_conversation']:.2f} | {r['instruction_facts']} "
                     f"({r['injection_conversations']} conv.) | {r['facts_stored']} | "
                     f"{_pct(r['supported_recall'])} | {_survival(r['survival'])} | "
                     f"{_rejected(r['rejected'])} | "
                     f"{_meta(r['meta'])} |")
    lines += [""] + [f"* {label} {llm}: {r['data']['file']} (sha256 {r['data']['sha256']}...)"
                     for label, llm, r in runs if "data" in r]
    lines += ["", "Per kind (conversations with junk / conversations, junk facts):", "",
              "| kind | " + " | ".join(f"{label} {llm}" for label, llm, _ in runs) + " |",
              "|---|" + "---|" * len(runs)]
    kinds = sorted({k for *_, r in runs for k in r["by_kind"]})
    for kind in kinds:
        cells = []
        for *_, r in runs:
            c = r["by_kind"].get(kind)
            cells.append(f"{c['with_junk']}/{c['conversations']}, {c['junk_facts']}"
                         if c else "")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _locomo(results: dict) -> list[str]:
    runs = [(label, llm, row) for label, llm, r in _runs(results, "locomo")
            for row in r["conversations"]]
    if not runs:
        return []
    lines = ["### Gold recall on LoCoMo", "",
             "speaker_a is the user. Gold recall = speaker_a's observations matched by a "
             "stored fact; misattribution = stored facts matching only the other speaker's "
             "observations (facts naming the other speaker excepted); evidence precision = "
             "facts matching a speaker_a observation whose evidence is that observation's "
             "dia id.", "",
             "| run | LLM | conv. | sessions | messages | observations | facts | gold recall "
             "| misattribution | evidence precision | s / message | proposed facts kept "
             "| rejected |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, llm, c in runs:
        lines.append(f"| {label} | {llm} | {c['conversation']} | {c['sessions']} | "
                     f"{c['messages']} | {c['user_observations']} | {c['facts_stored']} | "
                     f"{_pct(c['gold_recall'])} | {_pct(c['misattribution'])} | "
                     f"{_pct(c['evidence_precision'])} | {c['seconds_per_message']} | "
                     f"{_survival(c['survival'])} | {_rejected(c['rejected'])} |")
    lines += [""] + [f"* {label} {llm}: {_meta(r['meta'])}"
                     for label, llm, r in _runs(results, "locomo")]
    return [*lines, ""]


def _scripted(results: dict) -> list[str]:
    runs = list(_runs(results, "scripted"))
    if not runs:
        return []
    lines = ["### Scripted answers", "",
             "The scripted upstream answers each extraction request with one fact built "
             "from the request (answers.py), for a fresh user per case.", "",
             "| run | bad answers | rejected | good answers | kept | rejected by reason | "
             "commit, date, load |", "|---|---|---|---|---|---|---|"]
    for label, _, r in runs:
        lines.append(f"| {label} | {r['bad_answers']} | {_pct(r['bad_rejected_share'])} | "
                     f"{r['good_answers']} | {_pct(r['good_kept_share'])} | "
                     f"{_rejected(r['rejected'])} | {_meta(r['meta'])} |")
    for label, _, r in runs:
        lines += ["", f"{label}, per case (expected reason: reasons the service gave):", "",
                  "| case | answers | stored | rejected | expected | given |",
                  "|---|---|---|---|---|---|"]
        for case, c in r["by_case"].items():
            given = ", ".join(f"{k} {v}" for k, v in (c["reasons_given"] or {}).items())
            lines.append(f"| {case} | {c['answers']} | {c.get('kept', 0)} | "
                         f"{c.get('rejected', 0)} | {c['expected_reason'] or 'any'} | "
                         f"{given or '-'} |")
    return [*lines, ""]


if __name__ == "__main__":
    source = RESULTS / f"{NAME}.json"
    if not source.exists():
        sys.exit(f"{source} does not exist: run python -m evals.extraction first")
    print(write_markdown(_read(source), RESULTS / f"{NAME}.md"))
