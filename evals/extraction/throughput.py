"""Extraction throughput with the scripted upstream: messages/s and ms per stored fact
for the service's own share of a run (request building, verification, embedding,
the duplicate check, the batch transaction, the fact sheet), the LLM answering at once.

Each conversation is one batch whose answer proposes `--facts` facts quoting its user
messages (what a grounded answer looks like; extraction before evidence existed
ignores the quotes, so the same run measures both versions).

    python -m evals.extraction.throughput --conversations 40 --messages 10 --facts 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from chatsvc import Services, Settings
from chatsvc.embeddings import LocalEmbedder
from chatsvc.testing import Reply, ScriptedUpstream
from evals._machine import describe
from store.clock import new_id, now_iso

HOBBIES = ["keep bees", "play the cello", "grow tomatoes", "restore old bikes", "bake bread",
           "climb in the Alps", "collect stamps", "brew beer", "knit scarves", "sail dinghies"]


def seed(db, user_id: str, conversations: int, messages: int) -> list[list[str]]:
    """Conversations of alternating user/assistant messages; the user texts of each."""
    said = []
    for c in range(conversations):
        conversation = new_id()
        db.execute("INSERT INTO conversations(id, user_id, title, created_at, updated_at) "
                   "VALUES ($id, $user, 't', $now, $now)",
                   {"id": conversation, "user": user_id, "now": now_iso()})
        texts = []
        for m in range(messages):
            role = "user" if m % 2 == 0 else "assistant"
            text = (f"I {HOBBIES[(c + m) % len(HOBBIES)]} every weekend since {2000 + m}."
                    if role == "user" else "That sounds lovely, tell me more.")
            db.execute(
                "INSERT INTO messages(id, conversation_id, user_id, seq, role, content, status, "
                "created_at) VALUES ($id, $c, $user, (SELECT coalesce(max(seq), 0) + 1 FROM "
                "messages), $role, $text, 'complete', $now)",
                {"id": new_id(), "c": conversation, "user": user_id, "role": role,
                 "text": text, "now": now_iso()})
            if role == "user":
                texts.append(text)
        said.append(texts)
    return said


def answer(texts: list[str], facts: int) -> Reply:
    items = [{"category": "core", "fact": text.replace("I ", "", 1),
              "evidence": [{"message": f"m{2 * n + 1}", "quote": text}]}
             for n, text in enumerate(texts[:facts])]
    return Reply(chunks=[json.dumps({"new_facts": items, "referenced": [], "superseded": [],
                                     "forget": []})])


def run(conversations: int, messages: int, facts: int) -> dict:
    with tempfile.TemporaryDirectory() as data, ScriptedUpstream() as upstream:
        settings = Settings(data_dir=Path(data), llm_base_url=upstream.base_url,
                            llm_api_key="x", extract_interval_seconds=0).validated()
        services = Services.open(settings, embedder=LocalEmbedder())
        user, _ = services.stores.users.add("bench")
        with services.stores.db.transaction():
            said = seed(services.stores.db, user.id, conversations, messages)
        upstream.script(*[answer(texts, facts) for texts in said])
        started = time.perf_counter()
        result = asyncio.run(services.extractor.run_user(user.id))
        seconds = time.perf_counter() - started
        services.stores.db.close()
    stored = result.new_facts + result.referenced
    return {"seconds": round(seconds, 3), "messages": result.processed_messages,
            "messages_per_s": round(result.processed_messages / seconds, 1),
            "facts": stored, "ms_per_fact": round(1000 * seconds / max(1, stored), 2),
            "new_facts": result.new_facts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--facts", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [run(args.conversations, args.messages, args.facts) for _ in range(args.repeat)]
    print(json.dumps({"runs": runs, "median_messages_per_s": statistics.median(
        r["messages_per_s"] for r in runs), "machine": describe()}, indent=2))


if __name__ == "__main__":
    main()
