"""The "Verifier thresholds" section of evals/results/extraction_quality.md, rendered
from the figures evals/extraction/thresholds.py measured."""

from __future__ import annotations

CURVE_SHOWN = ("0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.4", "0.5")


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def render(report: dict, heading: str) -> str:
    return "\n".join([heading, "", *_method(report), *_rates(report), *_curve(report),
                      *_sentences(report), *_statements(report["statement_rule"]),
                      *_bench(report["benchmark"]), *_caveats(), ""])


def _method(report: dict) -> list[str]:
    dev, held = report["develop"], report["held_out"]
    return [
        "`python -m evals.extraction.thresholds --locomo ../shared/data/locomo10.zip` "
        "(chatsvc/extraction/_verify.py; figures also in `verifier_thresholds.json`).",
        "",
        f"**Content-word threshold: {report['threshold']:.2f}** (share of a fact's content "
        "units, English stemmed words without stopwords or CJK character bigrams, that its "
        f"quotes must hold; `MIN_COVERAGE` in the code: {report['in_code']:.2f}). Chosen as "
        f"the highest value on a 0.05 grid that keeps >= {pct(report['keep_target'])} of the "
        "true pairs whose numbers and names check out, on LoCoMo conversations "
        f"{_list(dev['conversations'])}; then reported unchanged on conversations "
        f"{_list(held['conversations'])} (44, 47, 48, 49, 50 are not read).",
        "",
        "True pair: a LoCoMo session observation and the text of the turn(s) its dia id names, "
        "quoted whole, the speaker's name as `ignore_words`, the session time as `said_at`. "
        "False pair: the same observation against a random other turn of the same speaker "
        f"(seeded). Skipped observations (dia id naming no turn of that speaker): "
        f"{dev['skipped_observations']} development, {held['skipped_observations']} held out.",
        "",
    ]


def _rates(report: dict) -> list[str]:
    rows = [("true pairs", "true_pairs", str), ("... numbers and names check out",
             "true_names_numbers_ok", pct),
            ("... kept, of those whose numbers and names check out", "true_kept_of_names_ok",
             pct), ("... kept, of all", "true_kept_all", pct), ("false pairs", "false_pairs", str),
            ("... rejected (`unsupported`)", "false_rejected", pct),
            ("... rejected by numbers and names alone", "false_rejected_by_names_numbers", pct)]
    lines = [f"| at threshold {report['threshold']:.2f} | development "
             f"{_list(report['develop']['conversations'])} | held out "
             f"{_list(report['held_out']['conversations'])} |", "|---|---:|---:|"]
    for name, key, show in rows:
        lines.append(f"| {name} | {show(report['develop'][key])} | "
                     f"{show(report['held_out'][key])} |")
    return [*lines, ""]


def _curve(report: dict) -> list[str]:
    lines = ["Development pairs by threshold:", "",
             "| threshold | true kept (names ok) | false rejected |", "|---:|---:|---:|"]
    for key in CURVE_SHOWN:
        row = report["curve"][key]
        lines.append(f"| {float(key):.2f} | {pct(row['true_kept_of_names_ok'])} | "
                     f"{pct(row['false_rejected'])} |")
    return [*lines, ""]


def _sentences(report: dict) -> list[str]:
    verdicts = report["best_sentence_verdicts"]
    total = sum(verdicts.values())
    shown = ", ".join(f"{k} {v} ({pct(v / total)})"
                      for k, v in sorted(verdicts.items(), key=lambda kv: -kv[1]))
    return ["Full `verify()` on the single-turn true development pairs, citing only the "
            f"turn's best-covering sentence as one extractor quote would ({total} pairs): "
            f"{shown}. Its `not_a_statement` share is the statement rule's false rejection "
            "rate on real conversation (some of those sentences are in fact questions).", ""]


def _statements(rule: dict) -> list[str]:
    lines = ["### The `not_a_statement` rule on the adversarial set", "",
             f"`evals/extraction/adversarial.jsonl`: {rule['conversations']} conversations "
             f"({', '.join(f'{n} {k}' for k, n in sorted(rule['by_language'].items()))}). "
             "Quotes are cut from every user line (the line, each sentence, the part after a "
             "colon) and judged with themselves as the fact, so only this rule can reject "
             "them.", "",
             "| kind | user-line quotes | rejected |", "|---|---:|---:|"]
    for kind, counts in rule["by_kind"].items():
        lines.append(f"| {kind} | {counts['quotes']} | {counts['rejected']} |")
    bad, good = rule["non_statement_quotes"], rule["statement_quotes"]
    facts = rule["supported_facts"]
    assistant = ", ".join(f"{k} {v}" for k, v in sorted(rule["assistant_quotes"].items()))
    lines += ["",
              f"* Quotes from the user lines of non-statement kinds (question, hypothetical, "
              f"role-play, injection, sarcasm, forget, request) rejected: {bad['rejected']} of "
              f"{bad['quotes']} ({pct(bad['rejected_share'])}).",
              f"* Quotes of real statements (plain, third_party, correction) wrongly rejected: "
              f"{good['rejected']} of {good['quotes']} ({pct(good['rejected_share'])}).",
              f"* Supported facts kept by full `verify()` with some quote of a user line: "
              f"{facts['kept']} of {facts['facts']}.",
              f"* Quotes of the assistant's lines cited as evidence: {assistant}.",
              "* assistant_claim user lines are mostly questions or thanks: their facts fall to "
              "`not_user`/`unsupported`, so they are listed but not counted above."]
    for lang, counts in rule["cross_pairs"].items():
        total = sum(counts.values())
        kept = counts.get("None", 0)
        lines.append(f"* Cross pairs ({lang}: each supported fact against the user-line quotes "
                     f"of every other {lang} conversation): {total - kept} of {total} rejected "
                     f"({pct((total - kept) / total)}), {kept} kept.")
    lines += [f"* Missed: {m}" for m in rule["missed"]]
    lines += [f"* Wrongly rejected: {m}" for m in rule["wrongly_rejected"]]
    lines += [f"* Supported fact lost: {m}" for m in facts["lost"]]
    return [*lines, ""]


def _bench(bench: dict) -> list[str]:
    wall, cpu = bench["wall"], bench["cpu"]
    return ["### Cost", "",
            f"`verify()` over every development pair (whole turns quoted), {bench['calls']} "
            f"calls: CPU time mean {cpu['mean_ms']:.2f} ms, p99 {cpu['p99_ms']:.2f} ms, max "
            f"{cpu['max_ms']:.2f} ms; wall clock mean {wall['mean_ms']:.2f} ms, p99 "
            f"{wall['p99_ms']:.2f} ms, max {wall['max_ms']:.2f} ms. Load average "
            f"{' / '.join(str(x) for x in bench['loadavg'])} on {bench['cores']} cores (the "
            "wall clock also counts waits for a core on this shared machine). Target: "
            "<= 5 ms per fact.", ""]


def _caveats() -> list[str]:
    return ["Limits: the adversarial set and the statement patterns were written by the same "
            "hand, so its figures are in-sample (the LoCoMo sentence figure above is not). "
            "The threshold is measured on English only; Chinese uses the same value on "
            "character bigrams (all Chinese supported facts of the adversarial set pass) and "
            "checks a Chinese name only after a naming verb (叫, 名叫, 姓 ...). False pairs "
            "are random turns, easier than a near-miss paraphrase."]


def _list(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)
