"""python -m evals.v1_store_bench [--facts 1000] [--chunks 1000] [--messages 1000]
                                  [--rounds 6] [--turns 10] [--retries 100]
                                  [--pause 0.5]

What storing `/v1` exchanges costs per turn (issue 39: at most +2 ms p50 for a turn
named by header). chat_bench's setup (the real app over loopback HTTP, uvicorn in a
thread, the scripted upstream, the real local embedder, a populated user), then growing
`/v1/chat/completions` conversations of `--turns` turns (evals.chat_clients
.V1Conversation) in four variants, one conversation of each per round for `--rounds`
rounds, their turns interleaved (`interleaved`): `"store": false` (today's /v1), stored
and found by the prefix of its messages, stored and named by the X-Chatsvc-Conversation
header, and stored for an end user a service key names by X-Chatsvc-User (populated as
the token's user). Per turn: client sent -> upstream received (the question's storage is
in it) and -> answer received (the answer's storage too), each turn after the indexer
caught up and `--pause` seconds more (a user's pause; 0 sends each turn as soon as the
indexer is done, which favours the unstored variant, whose embedding engine is still
warm from its last turn: chat_clients.interleaved). Then the same request `--retries`
times: the messages stored before and after (each exchange is stored once), and the
store's two writes of a turn timed alone, without HTTP (what a loaded machine's noise
hides in the figures above).

Results: evals/results/chat_bench_v1_store.{json,md}.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import httpx

from chatsvc import Services, Settings
from chatsvc.embeddings import LocalEmbedder
from chatsvc.testing import Reply, ScriptedUpstream
from evals.chat_bench import pct, populate, publish, serve
from evals.chat_clients import QUESTIONS, V1Conversation, interleaved, turns
from store.backend import Stores
from store.exchanges import Answer, Said

VARIANTS = ("not stored", "stored, by prefix", "stored, by header",
            "stored, for an end user named by header")
ACTING = VARIANTS[3]  # a service key naming its end user (X-Chatsvc-User), found by prefix


def retries(http: httpx.Client, upstream: ScriptedUpstream, model: str, n: int) -> dict:
    """The same request n times, and how many messages the store holds before and after."""
    body = {"model": model, "messages": [{"role": "user", "content": "Retried question"}]}
    before = http.get("/api/conversations/index-status").json()["messages"]
    for _ in range(n):
        upstream.script(Reply(chunks=["Retried answer."]))
        http.post("/v1/chat/completions", json=body).raise_for_status()
    after = http.get("/api/conversations/index-status").json()["messages"]
    return {"requests": n, "messages_before": before, "messages_after": after}


def store_alone(stores: Stores, user_id: str, conversations: int, n: int) -> dict:
    """The two writes of a stored turn, timed without HTTP (ms): growing conversations of
    n turns, each named by the header or found by its prefix in turn."""
    rows = {"record_question": [], "record_answer": [], "both": []}
    for c in range(conversations):
        said: list[Said] = []
        for i in range(n):
            said.append(Said("user", f"{QUESTIONS[i % len(QUESTIONS)]} (alone {c})"))
            started = time.perf_counter()
            recorded = stores.exchanges.record_question(user_id, said,
                                                        key=f"alone {c}" if c % 2 else None)
            asked = time.perf_counter()
            stores.exchanges.record_answer(user_id, recorded, said, Answer(
                f"Answer {i} (alone {c}).", "rag", "0" * 64, None, None))
            done = time.perf_counter()
            said.append(Said("assistant", f"Answer {i} (alone {c})."))
            rows["record_question"].append((asked - started) * 1000)
            rows["record_answer"].append((done - asked) * 1000)
            rows["both"].append((done - started) * 1000)
    return {key: pct(values) for key, values in rows.items()}


def run(args) -> dict:
    with tempfile.TemporaryDirectory() as tmp, ScriptedUpstream() as upstream:
        settings = Settings.from_env({
            "CHATSVC_DATA_DIR": tmp, "CHATSVC_EMBEDDINGS": "local", "CHATSVC_LOCAL_MODELS": "off",
            "LLM_BASE_URL": upstream.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
            "CHATSVC_LOG_LEVEL": "WARNING",
        })
        services = Services.open(settings, embedder=LocalEmbedder())
        user, token = services.stores.users.add("bench")
        _frontend, key = services.stores.users.add("frontend", kind="service")
        result = {"facts": args.facts, "chunks": args.chunks, "messages": args.messages,
                  "pause": args.pause,
                  "populate": populate(services, user.id, args.facts, args.chunks,
                                       args.messages)}
        rows: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
        with serve(services) as base, httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120
        ) as http, httpx.Client(base_url=base, timeout=120, headers={
                "Authorization": f"Bearer {key}", "X-Chatsvc-User": "end-user-1"}) as acting:
            end_user = acting.get("/api/me").raise_for_status().json()["id"]  # first sight
            populate(services, end_user, args.facts, 0, args.messages)  # the chunks are shared
            turns(http, upstream, 3)  # warm-up: embedder, knowledge snapshot, tokenizer
            for round_ in range(args.rounds):
                # Tags of one length: a variant's longer name in its texts made its query
                # embedding and keyword search dearer (+15 ms p50 for the end user's).
                conversations = {variant: V1Conversation(
                    acting if variant == ACTING else http, upstream, settings.llm_model,
                    tag=f"c{n}r{round_}", store=variant != "not stored",
                    name=f"c{n}r{round_}" if variant == "stored, by header" else None)
                    for n, variant in enumerate(VARIANTS)}
                for variant, measured in interleaved(conversations, args.turns, [http, acting],
                                                     pause=args.pause).items():
                    rows[variant] += measured
            result["retries"] = retries(http, upstream, settings.llm_model, args.retries)
        result["store_alone"] = store_alone(services.stores, user.id, 2 * args.rounds,
                                            args.turns)
        services.stores.db.close()
    for variant, measured in rows.items():
        result[variant] = {key: pct([row[key] for row in measured]) for key in measured[0]}
    return result


def markdown(result: dict) -> str:
    retried = result["retries"]
    lines = [
        "# /v1 turns stored or not", "", result["note"], "",
        f"User with {result['facts']} facts, {result['messages']} earlier messages, "
        f"{result['chunks']} knowledge chunks. Growing /v1 conversations, the four variants "
        "their turns interleaved; each turn sent once the indexer caught up "
        f"and {result['pause']} s more. ms.", "",
        "| variant | to upstream p50 | p95 | answer received p50 | p95 | n |",
        "|---|---|---|---|---|---|",
    ]
    for variant in VARIANTS:
        up, total = result[variant]["to_upstream_ms"], result[variant]["total_ms"]
        lines.append(f"| {variant} | {up['p50']} | {up['p95']} | {total['p50']} | "
                     f"{total['p95']} | {up['n']} |")
    base = result["not stored"]["total_ms"]["p50"]
    for variant in VARIANTS[1:]:
        extra = round(result[variant]["total_ms"]["p50"] - base, 2)
        lines.append(f"\n{variant}: {extra:+} ms p50 per turn over not stored (answer received).")
    alone = result["store_alone"]
    lines += ["", "The two writes of a stored turn alone (the store's calls, no HTTP, the "
              "same kind of conversations), ms:", "", "| | p50 | p95 | n |", "|---|---|---|---|"]
    lines += [f"| {key} | {row['p50']} | {row['p95']} | {row['n']} |"
              for key, row in alone.items()]
    lines += ["", f"Retries: {retried['requests']} requests with the same body stored "
              f"{retried['messages_after'] - retried['messages_before']} messages "
              "(the question and its answer, once)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--retries", type=int, default=100)
    parser.add_argument("--pause", type=float, default=0.5,
                        help="seconds each turn waits after the indexer caught up")
    args = parser.parse_args()
    publish("chat_bench_v1_store", args, run, markdown)


if __name__ == "__main__":
    main()
