"""The chat benchmark's client side (evals/chat_bench.py): chat turns, stateless turns of
an OpenAI client and searches, each timed from the client and, for chat turns, by the
server's Server-Timing header."""

from __future__ import annotations

import re
import time

import httpx

from chatsvc.testing import Reply, ScriptedUpstream

QUESTIONS = ["What do I work on these days?", "Which database should I use for this?",
             "Remind me what we said about deployment", "How do I index my notes?",
             "What is my cat called?", "Write a short plan for tomorrow"]
# Common and rarer words of the populated texts (QUESTIONS' words match none of them).
SEARCHES = ["w12 w340 w2711", "w3 w8 w951", "w70 w1200 w4410", "w1 w25 w300",
            "w510 w6001 w15", "w2 w44 w8800"]
# Questions that also name such words: the turn's keyword halves then have matches to rank.
MATCHED = [f"{question.rstrip('?')}: {words}" for question, words
           in zip(QUESTIONS, SEARCHES, strict=True)]


def server_timing(header: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w+);dur=([\d.]+)", header)}


def settle(http: httpx.Client) -> None:
    """Wait until the background indexer has embedded every message (a user's pause)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = http.get("/api/conversations/index-status").json()
        if status["indexed"] == status["messages"]:
            return
        time.sleep(0.05)


def turns(http: httpx.Client, upstream: ScriptedUpstream, n: int, *, paused: bool = False,
          questions: list[str] = QUESTIONS) -> list[dict]:
    """n turns of one conversation; per turn the overhead and the server's breakdown (ms).
    `paused`: each turn waits for the previous turns' messages to be indexed, as when a
    user reads and types between turns; else back to back, the indexing of one turn's
    messages (in-process embedding) competing with the next turn for the 2 cores."""
    rows, conversation = [], None
    for i in range(n):
        if paused:
            settle(http)
        upstream.script(Reply(chunks=["ok"]))
        body = {"message": questions[i % len(questions)], "stream": False}
        if conversation:
            body["conversation_id"] = conversation
        sent = time.monotonic()
        response = http.post("/api/chat", json=body)
        response.raise_for_status()
        conversation = response.json()["conversation_id"]
        arrived = upstream.requests[-1].received_at
        parts = server_timing(response.headers["server-timing"])
        rows.append({"mode": response.json()["mode"], "loopback_ms": (arrived - sent) * 1000,
                     "overhead_ms": parts["to_upstream"] - parts.get("embed", 0.0), **parts})
    return rows


def openai_turns(http: httpx.Client, upstream: ScriptedUpstream, model: str, n: int
                 ) -> list[dict]:
    """n one-question `/v1/chat/completions` turns: client sent -> upstream received (ms),
    the query embedding included (the route has no Server-Timing header). Each question
    is stored on first sight; a repeated one is a retry, which stores nothing more
    (evals/v1_store_bench.py measures what storing costs)."""
    rows = []
    for i in range(n):
        upstream.script(Reply(chunks=["ok"]))
        body = {"model": model, "messages": [{"role": "user",
                                              "content": QUESTIONS[i % len(QUESTIONS)]}]}
        sent = time.monotonic()
        response = http.post("/v1/chat/completions", json=body)
        response.raise_for_status()
        rows.append({"mode": response.json()["chatsvc"]["mode"],
                     "loopback_ms": (upstream.requests[-1].received_at - sent) * 1000})
    return rows


def searches(http: httpx.Client, n: int) -> list[dict]:
    """n hybrid conversation and knowledge searches: request sent -> answer (ms)."""
    rows = []
    for query in (SEARCHES[i % len(SEARCHES)] for i in range(n)):
        asked = {"conversation_search_ms": http.build_request(
                     "GET", "/api/conversations/search", params={"q": query}),
                 "knowledge_search_ms": http.build_request(
                     "POST", "/api/knowledge/search", json={"query": query})}
        row = {}
        for key, request in asked.items():
            sent = time.monotonic()
            response = http.send(request).raise_for_status()
            row[key] = (time.monotonic() - sent) * 1000
            assert response.json()["mode"] == "hybrid", response.text
        rows.append(row)
    return rows


class V1Conversation:
    """One growing `/v1/chat/completions` conversation (each request the one before, its
    answer and a new question; `tag` makes its texts its own), stored or not, named by
    the conversation header or not. `turn()` sends its next turn: client sent -> upstream
    received (`to_upstream_ms`, the question's storage in it) and -> answer received
    (`total_ms`, the answer's storage too), ms."""

    def __init__(self, http: httpx.Client, upstream: ScriptedUpstream, model: str, *,
                 tag: str, store: bool, name: str | None = None) -> None:
        self.http, self.upstream, self.model = http, upstream, model
        self.tag, self.store = tag, store
        self.headers = {"X-Chatsvc-Conversation": name} if name else {}
        self.messages: list[dict] = []

    def turn(self) -> dict:
        i = len(self.messages) // 2
        self.messages.append({"role": "user",
                              "content": f"{QUESTIONS[i % len(QUESTIONS)]} ({self.tag})"})
        self.upstream.script(Reply(chunks=[f"Answer {i} ({self.tag})."]))
        body = {"model": self.model, "messages": self.messages, "store": self.store}
        sent = time.monotonic()
        response = self.http.post("/v1/chat/completions", json=body, headers=self.headers)
        done = time.monotonic()
        response.raise_for_status()
        self.messages.append(response.json()["choices"][0]["message"])
        return {"to_upstream_ms": (self.upstream.requests[-1].received_at - sent) * 1000,
                "total_ms": (done - sent) * 1000}


def interleaved(conversations: dict[str, V1Conversation], n: int, clients: list[httpx.Client],
                *, pause: float) -> dict[str, list[dict]]:
    """n turns of each conversation, taken in turns (the order rotated every turn, so no
    variant always follows the same one); before each turn every client's indexer
    caught up (`settle`: no turn competes with embedding stored messages), then `pause`
    seconds more, the same for every variant: the in-process embedder embeds a query in
    24 ms right after its own last call and in 37-50 ms after a pause of 50 ms to 1 s
    (docs/evals.md), so a turn sent the instant the last one ended would be measured on
    a warm engine that no user's next message finds."""
    rows: dict[str, list[dict]] = {key: [] for key in conversations}
    keys = list(conversations)
    for i in range(n):
        for key in keys[i % len(keys):] + keys[:i % len(keys)]:
            for client in clients:
                settle(client)
            time.sleep(pause)
            rows[key].append(conversations[key].turn())
    return rows
