"""A run's JSON, its markdown report and one plot, under evals/results/<name>.*

python -m evals.recall.report evals/results/recall.json   # rebuild md + plot
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evals.recall.locomo import CATEGORIES
from evals.recall.metrics import ALL_TYPES, KS, OVERALL, SESSION_KS

RESULTS = Path(__file__).resolve().parents[1] / "results"
TARGET = 0.80  # recall@10 over categories 1-4 (issue 17)
# LoCoMo paper (Maharana et al. 2024), DRAGON over dialog turns, recall@5 / @10.
ANCHOR = {"recall@5": 0.588, "recall@10": 0.675}


def _row(cells: list[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _recall_table(result: dict) -> list[str]:
    groups = [*[name for name in CATEGORIES.values() if name in _groups(result)], OVERALL]
    header = [
        "variant",
        "mode",
        *[f"{g} r@5/10/20" for g in groups],
        f"{OVERALL} all@10",
        "search p50/p95 ms",
        "degraded",
    ]
    lines = [_row(header), _row(["---"] * len(header))]
    for variant, run in result["variants"].items():
        for mode, found in run["modes"].items():
            cells = [variant, mode]
            for group in groups:
                scores = found["by_category"].get(group)
                cells.append(
                    " / ".join(f"{scores[f'recall@{k}']:.3f}" for k in KS) if scores else "-"
                )
            overall = found["by_category"].get(OVERALL, {})
            latency = found["latency_ms"]
            cells += [
                f"{overall.get('all@10', 0):.3f}",
                f"{latency['p50']} / {latency['p95']}",
                sum(found["degraded"].values()),
            ]
            lines.append(_row(cells))
    return lines


def _groups(result: dict) -> set[str]:
    return {
        g
        for run in result["variants"].values()
        for found in run["modes"].values()
        for g in found["by_category"]
    }


def _best(result: dict) -> tuple[str, str, float]:
    return max(
        (
            (v, m, f["by_category"].get(OVERALL, {}).get("recall@10", 0.0))
            for v, run in result["variants"].items()
            for m, f in run["modes"].items()
        ),
        key=lambda t: t[2],
    )


def _sample_lines(result: dict) -> list[str]:
    """recall@10 over categories 1-4 of each sample (None: it has no such question)."""
    runs = [
        (v, m, f["by_sample"])
        for v, run in result["variants"].items()
        for m, f in run["modes"].items()
    ]
    samples = list(runs[0][2]) if runs else []
    lines = [_row(["variant", "mode", *samples]), _row(["---"] * (2 + len(samples)))]
    for variant, mode, found in runs:
        lines.append(
            _row(
                [
                    variant,
                    mode,
                    *[f"{found[s]['recall@10']:.3f}" if found[s] else "-" for s in samples],
                ]
            )
        )
    return lines


def _import_lines(result: dict) -> list[str]:
    lines = [
        _row(
            [
                "variant",
                "messages",
                "requests",
                "import s",
                "import + index s",
                "messages/s",
                "server tracebacks",
            ]
        ),
        _row(["---"] * 7),
    ]
    for variant, run in result["variants"].items():
        i = run["import"]
        lines.append(
            _row(
                [
                    variant,
                    i["messages"],
                    i["requests"],
                    i["import_s"],
                    i["import_and_index_s"],
                    i["messages_per_s"],
                    len(run["server_crashes"]),
                ]
            )
        )
    return lines


def _probe_lines(result: dict) -> list[str]:
    probes = {v: run["probe"] for v, run in result["variants"].items() if "probe" in run}
    if not probes:
        return ["No interactive probe in this run (`--probe-messages 0`).", ""]
    lines = []
    for variant, p in probes.items():
        quiet, busy = p["quiet"], p["during_import"]
        lines += [
            f"Variant `{variant}`: another user imported {p['bulk_messages']} messages "
            f"in {p['bulk_requests']} requests ({p['bulk_import_s']} s accepted, "
            f"{p['bulk_import_and_index_s']} s indexed: {p['bulk_messages_per_s']} "
            "messages/s).",
            "",
            _row(["chat turns", "n", "first token p50 / p95 / max ms", "total p50 / p95 / max ms"]),
            _row(["---"] * 4),
        ]
        for name, s in (("quiet server", quiet), ("during the import", busy)):
            ft, total = s["first_token_ms"], s["total_ms"]
            lines.append(
                _row(
                    [
                        name,
                        s["turns"],
                        f"{ft['p50']} / {ft['p95']} / {ft['max']}",
                        f"{total['p50']} / {total['p95']} / {total['max']}",
                    ]
                )
            )
        lines.append("")
    return lines


def markdown(result: dict) -> str:
    meta = result["meta"]
    variant, mode, best = _best(result)
    problems = result["problems"]["counts"]
    lines = [
        f"# Recall benchmark: {meta['data']}",
        "",
        f"Machine: {meta['machine']}.",
        "",
        f"`{meta['command']}`: {meta['samples']} samples, {meta['turns']} turns, "
        f"questions per category {meta['questions']}; ran {meta['seconds']:.0f} s.",
        "",
        f"**Best recall@10 over categories 1-4: {best:.3f}** (`{variant}` keys, "
        f"`{mode}` search); target >= {TARGET:.2f}: {'met' if best >= TARGET else 'not met'}."
        f" Anchor: the LoCoMo paper's DRAGON over dialog turns, recall@5/10 = "
        f"{ANCHOR['recall@5']}/{ANCHOR['recall@10']}.",
        "",
        "recall@k: share of a question's evidence turns in the top k, averaged over the "
        "questions of a category; all@10: every evidence turn in the top 10. "
        "Categories use LoCoMo's numbering (1 multi-hop, 2 temporal, 3 open-domain, "
        "4 single-hop, 5 adversarial); `1-4` is every question of 1-4 together.",
        "",
        *_recall_table(result),
        "",
        "recall@10 over categories 1-4 per sample:",
        "",
        *_sample_lines(result),
        "",
        "## Import and indexing (local embedder)",
        "",
        *_import_lines(result),
        "",
        "## Chat while another user imports",
        "",
        *_probe_lines(result),
        "## What the file had that did not fit",
        "",
    ]
    lines += [
        f"* {kind}: {n} (e.g. {', '.join(result['problems']['examples'][kind][:3])})"
        for kind, n in sorted(problems.items())
    ] or ["Nothing."]
    return "\n".join(lines) + "\n"


def haystack_markdown(result: dict) -> str:
    """A LongMemEval run: session recall_any@5/@10 and turn recall@10 per question type."""
    meta = result["meta"]
    columns = [*(f"session_any@{k}" for k in SESSION_KS), "session_all@10", "turn@10"]
    lines = [
        f"# Recall benchmark: {meta['data']} (LongMemEval)",
        "",
        f"Machine: {meta['machine']}.",
        "",
        f"`{meta['command']}`: {meta['samples']} questions (each its own user and haystack),"
        f" {meta['turns']} turns, questions per type {meta['questions']}; ran "
        f"{meta['seconds']:.0f} s. Questions: {', '.join(meta['question_ids'])}.",
        "",
        "session_any@k: an answer session among the first k distinct sessions of the "
        "ranked turns (the API's 50 results); session_all@10: every answer session there; "
        "turn@10: share of the turns marked `has_answer` in the top 10 (over the questions "
        "that mark some).",
        "",
        _row(["variant", "mode", "type", "questions", *columns, "search p50/p95 ms"]),
        _row(["---"] * (5 + len(columns))),
    ]
    for variant, run in result["variants"].items():
        for mode, found in run["modes"].items():
            latency = found["latency_ms"]
            for kind, scores in found["by_type"].items():
                cells = [f"{scores[c]:.3f}" if c in scores else "-" for c in columns]
                shown = f"**{kind}**" if kind == ALL_TYPES else kind
                lines.append(_row([variant, mode, shown, scores["questions"], *cells,
                                   f"{latency['p50']} / {latency['p95']}"]))
    lines += ["", "## Import and indexing (local embedder)", "", *_import_lines(result),
              "", "## What the file had that did not fit", ""]
    problems = result["problems"]
    lines += [
        f"* {kind}: {n} (e.g. {', '.join(problems['examples'][kind][:3])})"
        for kind, n in sorted(problems["counts"].items())
    ] or ["Nothing."]
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(result["variants"])
    modes = sorted({m for run in result["variants"].values() for m in run["modes"]})
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / max(len(modes), 1)
    for n, mode in enumerate(modes):
        values = [
            result["variants"][v]["modes"]
            .get(mode, {})
            .get("by_category", {})
            .get(OVERALL, {})
            .get("recall@10", 0.0)
            for v in variants
        ]
        ax.bar([i + n * width for i in range(len(variants))], values, width, label=mode)
    ax.axhline(TARGET, color="black", linestyle="--", linewidth=1, label="target 0.80")
    ax.axhline(
        ANCHOR["recall@10"],
        color="grey",
        linestyle=":",
        linewidth=1,
        label="DRAGON (LoCoMo paper) 0.675",
    )
    ax.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(variants))], variants)
    ax.set_ylim(0, 1)
    ax.set_xlabel("CHATSVC_RECALL_KEYS")
    ax.set_ylabel("recall@10, categories 1-4")
    ax.set_title(f"Recall of evidence turns: {result['meta']['data']}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=5, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(result: dict, name: str) -> Path:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    if result["meta"].get("format") == "longmemeval":
        (RESULTS / f"{name}.md").write_text(haystack_markdown(result))
        return RESULTS / f"{name}.md"
    (RESULTS / f"{name}.md").write_text(markdown(result))
    plot(result, RESULTS / f"{name}.png")
    return RESULTS / f"{name}.md"


if __name__ == "__main__":
    source = Path(sys.argv[1])
    loaded = json.loads(source.read_text())
    write(loaded, source.stem)
