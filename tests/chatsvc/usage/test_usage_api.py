"""GET /api/usage: the caller's tokens, cached share and estimated cost per model."""

from __future__ import annotations

import pytest

from chatsvc.pricing import PRICES
from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import chat

WIDE = {"from": "2000-01-01", "to": "2100-01-01"}


@pytest.fixture
def settings(upstream_settings):
    return upstream_settings  # the scripted upstream, reporting usage and cached tokens


def test_usage_after_two_turns_of_one_conversation(client, alice, upstream, settings):
    first = chat(client, alice[1], "Where do I live?")
    second = chat(client, alice[1], "And my cat?", first[0][1]["conversation_id"])
    done = [first[-1][1]["usage"], second[-1][1]["usage"]]
    body = client.get("/api/usage", params=WIDE, headers=alice[1]).json()
    assert body["user"] == "alice"
    assert (body["from"], body["to"]) == ("2000-01-01T00:00:00.000000Z",
                                          "2100-01-01T00:00:00.000000Z")
    [model] = body["models"]
    prompt = sum(u["prompt_tokens"] for u in done)
    cached = sum(u["cached_tokens"] for u in done)
    completion = sum(u["completion_tokens"] for u in done)
    price = PRICES[settings.llm_model]
    assert model == {
        "model": settings.llm_model, "turns": 2, "prompt_tokens": prompt,
        "cached_tokens": cached, "completion_tokens": completion, "estimated_turns": 0,
        "cached_share": round(cached / prompt, 4),
        "cost_usd": round(price.cost(prompt, cached, completion), 6),
        "price": {"input": price.input, "cached_input": price.cached_input,
                  "output": price.output},
    }
    assert 0 < model["cached_share"] < 1
    assert body["total"] == {k: v for k, v in model.items() if k not in ("model", "price")}


def test_a_model_without_a_price_has_no_cost(client, alice, upstream, monkeypatch, services):
    monkeypatch.setattr(services.llm, "model", "my-self-hosted-model")
    upstream.script(Reply(report_usage=False))  # like llama.cpp's server: counted by chatsvc
    chat(client, alice[1], "hello")
    body = client.get("/api/usage", params=WIDE, headers=alice[1]).json()
    [model] = body["models"]
    assert model["model"] == "my-self-hosted-model" and model["estimated_turns"] == 1
    assert model["cost_usd"] is None and model["price"] is None
    assert model["cached_share"] is None  # not reported: unknown, not 0
    assert body["total"]["cost_usd"] is None


def test_the_range_and_its_default(client, alice, upstream):
    chat(client, alice[1], "hello")
    past = client.get("/api/usage", params={"from": "2000-01-01", "to": "2000-02-01T12:00:00Z"},
                      headers=alice[1]).json()
    assert past["models"] == [] and past["total"]["turns"] == 0
    assert past["total"]["cost_usd"] == 0
    recent = client.get("/api/usage", headers=alice[1]).json()  # the last 30 days
    assert recent["total"]["turns"] == 1


@pytest.mark.parametrize(("params", "field"), [
    ({"from": "yesterday"}, "from"), ({"to": "2026-13-01"}, "to"),
    ({"from": "2026-02-01", "to": "2026-01-01"}, "from"),
    ({"to": "0001-01-10"}, "to"),  # the default from, 30 days before, is before year 1
])
def test_bad_ranges_are_400_naming_the_field(client, alice, params, field):
    response = client.get("/api/usage", params=params, headers=alice[1])
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"invalid value for {field}: ")


def test_admins_read_anyones_usage_and_users_only_their_own(client, alice, bob, admin,
                                                            upstream):
    chat(client, alice[1], "hello")
    as_admin = client.get("/api/usage", params={**WIDE, "user": "alice"}, headers=admin[1])
    assert as_admin.status_code == 200 and as_admin.json()["total"]["turns"] == 1
    assert client.get("/api/usage", params={"user": "alice"},
                      headers=bob[1]).status_code == 403
    assert client.get("/api/usage", params={"user": "bob"}, headers=bob[1]).status_code == 200
    assert client.get("/api/usage", params={"user": "nobody"},
                      headers=admin[1]).status_code == 404
    assert client.get("/api/usage", params=WIDE, headers=bob[1]).json()["total"]["turns"] == 0
