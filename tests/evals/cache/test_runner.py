"""A small scenario replayed through the real service against the scripted upstream."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pytest

from chatsvc.testing import ScriptedUpstream
from evals.cache import providers as rules
from evals.cache import report, runner
from evals.cache.metrics import summarise
from evals.cache.scenarios import Scenario, Turn

GAP = 65 * 60  # past the chat's snapshot pinning: the memory write reaches the prompt

SCENARIO = Scenario(
    id="t-00-memory", language="en", kind="memory_write", user_name="tester",
    timezone="Europe/Lisbon", start=datetime(2026, 11, 20, 10, 0, tzinfo=UTC),
    facts=({"category": "core", "fact": "Lives in Lisbon"},
           {"category": "technical", "fact": "Uses SQLite every day"},
           {"category": "project", "fact": "Is planning a bike trip"}),
    memories=({"type": "preference", "content": "Answer briefly"},),
    docs=({"title": "Bike notes", "content": "Pack a spare tube. Check the brakes."},),
    turns=(
        Turn(0, "Can you help me plan the bike trip?", "Sure: start with the route."),
        Turn(60, "What should I pack?", "A spare tube and a pump."),
        Turn(120, "And the brakes?", "Check the pads first.",
             ({"type": "write_memory",
               "memory": {"type": "instruction", "content": "Use metric units"}},)),
        Turn(120 + GAP, "How far per day?", "About 60 km on flat roads."),
    ),
)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory, local_embedder):
    providers = rules.load()
    with ScriptedUpstream() as upstream:
        replay = runner.Replay(
            [SCENARIO], ("before_conversation", "before_last_user"), providers,
            runner.Upstream(upstream.base_url, "scripted-model", scripted=upstream),
            tmp_path_factory.mktemp("work"), embedder=local_embedder,
        )
        rows, _ = runner.run(replay)
    return rows, providers


def test_every_turn_is_measured_per_layout(replayed):
    rows, _ = replayed
    assert [(r["layout"], r["turn"]) for r in rows] == [
        (layout, turn) for layout in ("before_conversation", "before_last_user")
        for turn in (1, 2, 3, 4)]
    for row in rows:
        assert row["prompt_tokens"] > row["stable_tokens"] > 0
        assert isinstance(row["reported_cached"], int)  # the scripted upstream reports it
        assert set(row["providers"]) == set(replayed[1])
        assert row["mode"] == "rag"
    assert all(r["lcp_tokens"] is None for r in rows if r["turn"] == 1)


def test_the_memory_write_is_named_once_it_reaches_the_prompt(replayed):
    rows, _ = replayed
    for layout in ("before_conversation", "before_last_user"):
        mine = {r["turn"]: r for r in rows if r["layout"] == layout}
        assert mine[3]["prefix_hash"] == mine[1]["prefix_hash"]  # pinned snapshot
        assert mine[4]["prefix_hash"] != mine[3]["prefix_hash"]
        assert mine[4]["miss"]["cause"] == "memory write"
        assert mine[4]["providers"]["openai"]["expired"] is True  # 65 idle minutes
        assert mine[4]["lcp_tokens"] < mine[4]["stable_tokens"]


def test_llamacpp_prediction_tracks_what_the_upstream_reported(replayed):
    rows, _ = replayed
    for row in rows:
        if row["turn"] >= 2 and row["layout"] == "before_last_user":
            predicted = row["providers"]["llamacpp"]["cached"]
            # The scripted upstream tokenises the joined text, we tokenise per message.
            assert abs(predicted - row["reported_cached"]) <= 16


def test_report_files(replayed, tmp_path):
    rows, providers = replayed
    result = {"meta": {"command": "test", "upstream": "scripted", "conversations": 1,
                       "turns": 4, "seconds": 1.0},
              "summary": summarise(rows, providers), "turns": rows}
    paths = report.write(result, providers, tmp_path, "cache_test")
    assert sorted(p.name for p in paths) == sorted([
        "cache_test.json", "cache_test.md", "cache_test_share_by_turn.png",
        "cache_test_cost_per_conversation.png"])
    data = json.loads((tmp_path / "cache_test.json").read_text())
    share = data["summary"]["before_last_user"]["providers"]["openai"]
    assert 0 <= share["cacheable_share_from_turn_2"] <= 1
    assert "memory write" in (tmp_path / "cache_test.md").read_text()
    assert (tmp_path / "cache_test_share_by_turn.png").read_bytes()[:4] == b"\x89PNG"


def test_running_service_mode_records_and_cleans_up(monkeypatch, local_embedder):
    from dataclasses import replace

    from litestar.testing import TestClient

    from chatsvc import Services, Settings, create_app
    from evals.cache.proxy import RecordingProxy

    scenario = replace(SCENARIO, turns=SCENARIO.turns[1:3])  # 2 turns, the 2nd writes memory
    with ScriptedUpstream() as upstream, RecordingProxy(upstream.base_url) as proxy:
        monkeypatch.setenv("LLM_BASE_URL", proxy.base_url)
        monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
        services = Services.open(Settings.from_env(), embedder=local_embedder)
        _, token = services.stores.users.add("remote-user")
        replay = runner.Replay(
            [scenario], ("before_conversation",), rules.load(),
            runner.Upstream(upstream.base_url, "scripted-model", scripted=upstream),
            work_dir=None)
        try:
            with TestClient(create_app(services=services)) as client:
                rows, _ = runner.run_remote(replay, client, token, proxy)
                headers = {"Authorization": f"Bearer {token}"}
                facts = client.get("/api/facts", headers=headers).json()
                memories = client.get("/api/memory", headers=headers).json()
        finally:
            services.stores.db.close()
    assert [(r["layout"], r["turn"]) for r in rows] == [("before_conversation", 1),
                                                         ("before_conversation", 2)]
    assert rows[1]["lcp_tokens"] > rows[1]["stable_tokens"] > 0
    assert facts["total"] == 0 and memories["memories"] == []  # everything it made is gone


def test_tool_turns_keep_the_cache_hitting(tmp_path, local_embedder):
    from dataclasses import replace

    providers = rules.load()
    scenario = replace(SCENARIO, turns=SCENARIO.turns[:2] + SCENARIO.turns[3:])
    with ScriptedUpstream() as upstream:
        replay = runner.Replay(
            [scenario], ("in_history",), providers,
            runner.Upstream(upstream.base_url, "scripted-model", scripted=upstream),
            tmp_path, embedder=local_embedder, tool_turns=True)
        rows, _ = runner.run(replay)
    assert [(r["turn"], r["round"]) for r in rows] == [(1, 0), (2, 0), (2, 1), (3, 0)]
    assert rows[2]["tool_calls"] == 1
    # Each request extends the previous one: the tool round's request and the next turn.
    for previous, row in itertools.pairwise(rows[1:]):
        assert row["lcp_tokens"] >= previous["prompt_tokens"] - 1
        assert row["miss"] is None
        # ... as the upstream saw it too (it reports cached tokens per request).
        assert row["reported_cached"] >= previous["prompt_tokens"] - 16
    # (OpenAI caches nothing under 1024 tokens: this conversation is shorter.)
    share = summarise(rows, providers)["in_history"]["providers"]["llamacpp"]
    assert share["cacheable_share_from_turn_2"] > 0.5


def test_v1_turns_keep_one_prefix_in_one_stored_conversation(tmp_path, local_embedder):
    from dataclasses import replace

    providers = rules.load()
    scenario = replace(SCENARIO, turns=SCENARIO.turns[:3])  # a memory write before turn 3
    with ScriptedUpstream() as upstream:
        replay = runner.Replay(
            [scenario], ("in_history",), providers,
            runner.Upstream(upstream.base_url, "scripted-model", scripted=upstream),
            tmp_path, embedder=local_embedder, via="v1")
        rows, _ = runner.run(replay)
        sent = [request.body["messages"] for request in upstream.requests]
    assert [row["turn"] for row in rows] == [1, 2, 3]
    # The client's conversation, stored as one, pins its snapshot: one prefix throughout.
    assert len({row["conversation_id"] for row in rows}) == 1 and rows[0]["conversation_id"]
    assert len({row["prefix_hash"] for row in rows}) == 1
    assert sent[-1][-1] == {"role": "user", "content": scenario.turns[2].user}
    assert {"role": "assistant", "content": scenario.turns[0].assistant} in sent[-1]
