"""evals/results/local_model.md from the JSON: the hand-written analysis
(evals/local_model/analysis.md) followed by the measured tables."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


# Headings and sentences of chatsvc's own prompt (prompts/templates): an answer that
# contains one recites the prompt instead of answering from it.
LEAK_MARKERS = ("FACT SHEET (", "USER MEMORY (", "POSSIBLY RELATED", "CURRENT DATE",
                "PINNED DOCUMENTS", "RECENT CONVERSATIONS (",
                "Understood. I will use that context",
                "You are a helpful assistant with a long-term memory")


def leaks(model: dict) -> int:
    return sum(any(marker in a["answer"] for marker in LEAK_MARKERS) for a in model["answers"])


def _pct(value) -> str:
    return "—" if value is None else f"{value * 100:.0f} %"


def write_markdown(result: dict, path: Path) -> None:
    models = result["models"]
    lines = ["# Local chat model for chatsvc (issue 19)", ""]
    analysis = HERE / "analysis.md"
    if analysis.exists():
        lines += [analysis.read_text().rstrip(), ""]
    lines += [
        "## Measured", "",
        f"Machine: {result['machine']}, shared with other engineers' test runs; every "
        "process ran under `nice -n 10`, one model loaded at a time. "
        f"{result['questions']} questions; score = answer contains an expected string.", "",
        "| model | params | quant | file size | score EN | score ZH | total | TTFT p50 | "
        "tokens/s | RSS | prompt leaks | loadavg start → end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in models:
        lines.append(
            f"| {m['model']} | {m['params']} | {m['quant']} | {m['file_mib']:.0f} MiB | "
            f"{m['hits_en']}/{m['n_en']} ({_pct(m['score_en'])}) | "
            f"{m['hits_zh']}/{m['n_zh']} ({_pct(m['score_zh'])}) | "
            f"**{m['hits']}/{m['n']} ({_pct(m['score_total'])})** | {m['ttft_p50_s']} s | "
            f"{m['decode_tok_s_p50']} | {m['peak_rss_mib']:.0f} MiB | {leaks(m)} | "
            f"{' '.join(map(str, m['loadavg_start']))} → {' '.join(map(str, m['loadavg_end']))} |")
    lines += [
        "",
        "TTFT: client-observed time from sending `POST /api/chat` (SSE) to the first `delta` "
        "event, graded questions only (includes chatsvc's retrieval and the prompt prefill). "
        "tokens/s: llama.cpp's own decode rate (`eval time`), median over completions of 8+ "
        "tokens. RSS: peak resident memory (VmHWM) of the llama.cpp server process. "
        "Prompt leaks: graded answers that recite chatsvc's own prompt scaffolding (a "
        "template heading such as `POSSIBLY RELATED` or the ack turn), which can also "
        "make a containment hit by recitation.", "",
        "| model | prefill tok/s p50 | TTFT p90 | mean answer tokens | completions | "
        "server start | wall time | max_tokens | n_ctx | chat format | LLM_SYSTEM_ROLE |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in models:
        lines.append(
            f"| {m['model']} | {m['prefill_tok_s_p50']} | {m['ttft_p90_s']} s | "
            f"{m['mean_completion_tokens']} | {m['completions']} | {m['server_load_s']} s | "
            f"{m['wall_s'] / 60:.1f} min | {m['max_tokens']} | {m['n_ctx']} | "
            f"{m['chat_format']} | {m['system_role']} |")
    timed = [(m, sp) for m in models for sp in m.get("speed_runs", [])]
    if timed:
        lines += ["", "Speed under the same conditions (`python -m evals.local_model.speed`: the "
                  "models one after another, same ~1000-token prompt straight to llama.cpp, "
                  "no prefix-cache hit, 128-token answer; median of the rounds; every pass "
                  "kept, "
                  "since the shared machine's load changed between and during runs):", "",
                  "| model | pass | threads | prompt tokens | prefill tok/s | TTFT | "
                  "decode tok/s | RSS | loadavg start → end |", "|---" * 9 + "|"]
        for m, sp in sorted(timed, key=lambda t: (t[1]["run"], models.index(t[0]))):
            lines.append(
                f"| {m['model']} | {sp['run']} | {sp['threads']} | {sp['prompt_tokens']} | "
                f"{sp['prefill_tok_s']} | "
                f"{sp['ttft_s']} s | {sp['decode_tok_s']} | {sp['peak_rss_mib']:.0f} MiB | "
                f"{' '.join(map(str, sp['loadavg_start']))} → "
                f"{' '.join(map(str, sp['loadavg_end']))} |")
    kinds = sorted({k for m in models for k in m["by_kind"]})
    lines += ["", "By kind of grounding (hits/questions):", "",
              "| model | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for m in models:
        lines.append(f"| {m['model']} | " + " | ".join(
            f"{m['by_kind'][k]['hits']}/{m['by_kind'][k]['n']}" if k in m["by_kind"] else "—"
            for k in kinds) + " |")
    ids = [a["id"] for a in models[0]["answers"]] if models else []
    lines += ["", "Per question (✓ = hit):", "",
              "| question | " + " | ".join(m["model"] for m in models) + " |",
              "|---" * (len(models) + 1) + "|"]
    by_model = [{a["id"]: a for a in m["answers"]} for m in models]
    for qid in ids:
        lines.append(f"| {qid} | " + " | ".join(
            ("✓" if answers[qid]["hit"] else "·") if qid in answers else "—"
            for answers in by_model) + " |")
    lines += ["", "## Answers", ""]
    for m in models:
        lines += [f"### {m['model']}", "",
                  f"Packages: `{' '.join(m['packages'])}`; GGUF `{m['file']}`; "
                  f"llama.cpp: `{m['llama_command']}`", ""]
        for a in m["answers"]:
            text = " ".join(a["answer"].split())[:220].replace("|", "\\|")
            lines.append(f"* {'✓' if a['hit'] else '·'} `{a['id']}`: {text}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
