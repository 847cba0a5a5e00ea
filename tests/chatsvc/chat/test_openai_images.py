"""Image parts on /v1/chat/completions: passed to a vision upstream exactly, refused
(400, nothing sent upstream) when the model cannot see or the image breaks a rule."""

from __future__ import annotations

import base64

import pytest
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import HTTPS_URL, PNG, PNG_URL


@pytest.fixture
def settings(vision_settings) -> Settings:
    return vision_settings


def part(url: str, detail: str | None = None) -> dict:
    image_url = {"url": url} if detail is None else {"url": url, "detail": detail}
    return {"type": "image_url", "image_url": image_url}


def ask(*images: dict, text: str = "What is in the picture?") -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": text}, *images]}]


def post(client, headers, settings, messages) -> object:
    return client.post("/v1/chat/completions", headers=headers,
                       json={"model": settings.llm_model, "messages": messages})


def test_the_upstream_receives_each_image_part_exactly(oai, upstream, settings):
    upstream.script(Reply(chunks=["A cat."]))
    images = [part(PNG_URL), part(HTTPS_URL, "low")]
    result = oai.chat.completions.create(model=settings.llm_model, messages=ask(*images))
    assert result.choices[0].message.content == "A cat."
    current = upstream.requests[0].body["messages"][-1]
    assert current == {"role": "user", "content": [
        {"type": "text", "text": "What is in the picture?"}, *images]}


def test_images_leave_the_stable_prefix_and_the_block_alone(oai, upstream, settings):
    upstream.script(Reply(chunks=["a"]), Reply(chunks=["b"]))
    for images in ([], [part(PNG_URL)]):
        oai.chat.completions.create(model=settings.llm_model, messages=ask(*images))
    plain, with_image = (r.body["messages"] for r in upstream.requests)
    # The second turn may recall the first (stored) exchange once it is indexed: its block
    # (the user's "POSSIBLY ..." message and the assistant's acknowledgement) then comes in.
    def stable(messages):
        block = [i for i, m in enumerate(messages) if str(m["content"]).startswith("POSSIBLY")]
        return messages[:block[0]] if block else messages[:-1]
    assert stable(plain) == stable(with_image)
    assert all(isinstance(m["content"], str) for m in with_image[:-1])  # no image there
    assert plain[-1]["content"] == "What is in the picture?"
    assert with_image[-1]["content"][1] == part(PNG_URL)


def test_earlier_messages_keep_their_images(oai, upstream, settings):
    upstream.script(Reply(chunks=["Grey."]))
    messages = [*ask(part(HTTPS_URL)), {"role": "assistant", "content": "A cat."},
                {"role": "user", "content": "What colour is it?"}]
    oai.chat.completions.create(model=settings.llm_model, messages=messages)
    sent = upstream.requests[0].body["messages"]
    assert messages[0] in sent
    assert sent[-1] == {"role": "user", "content": "What colour is it?"}


@pytest.mark.parametrize("vision", ["false"])
def test_vision_off_is_a_400_saying_how_to_turn_it_on(live_client, alice, upstream, settings):
    response = post(live_client, alice[1], settings, ask(part(HTTPS_URL)))
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "messages[0].content[1]" in message and "LLM_VISION=true" in message
    assert upstream.requests == []


def test_a_bundled_model_never_takes_images(upstream, settings, monkeypatch, local_embedder):
    monkeypatch.setenv("LLM_MODEL", "gemma-3-270m")
    bundled = Settings.from_env()
    assert bundled.llm_vision and not bundled.vision_enabled
    services = Services.open(bundled, embedder=local_embedder)
    _, token = services.stores.users.add("carol")
    try:
        with TestClient(create_app(services=services)) as client:
            response = post(client, {"Authorization": f"Bearer {token}"}, bundled,
                            ask(part(HTTPS_URL)))
    finally:
        services.stores.db.close()
    assert response.status_code == 400
    assert "bundled local model" in response.json()["error"]["message"]
    assert upstream.requests == []


@pytest.mark.parametrize("image, field, says", [
    (part("http://images.example.com/cat.jpg"), "content[1].image_url.url", "https://"),
    (part("ftp://x/y.png"), "content[1].image_url.url", "https://"),
    (part("data:text/plain;base64,aGVsbG8="), "content[1].image_url.url", "text/plain"),
    (part("data:image/png;base64,not base64!"), "content[1].image_url.url", "base64"),
    (part("data:image/png,rawbytes"), "content[1].image_url.url", "data:<image type>"),
    (part("data:image/jpeg;base64," + base64.b64encode(PNG).decode()),
     "content[1].image_url.url", "not a image/jpeg image"),
    (part("data:image/png;base64," + base64.b64encode(PNG + bytes(1000)).decode()),
     "content[1].image_url.url", "CHATSVC_MAX_IMAGE_BYTES"),
    (part(HTTPS_URL, "ultra"), "content[1].image_url.detail", "auto, low, high"),
    ({"type": "image_url", "image_url": HTTPS_URL}, "content[1].image_url", "must be"),
    ({"type": "input_audio", "input_audio": {}}, "messages[0]", "image_url parts"),
])
def test_a_bad_image_is_a_400_naming_it(live_client, alice, upstream, settings, image, field,
                                        says):
    response = post(live_client, alice[1], settings, ask(image))
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert field in message and says in message
    assert upstream.requests == []


def test_more_images_than_the_limit_is_a_400(live_client, alice, upstream, settings):
    response = post(live_client, alice[1], settings, ask(*[part(HTTPS_URL)] * 3))
    assert response.status_code == 400
    assert "at most 2 images" in response.json()["error"]["message"]
    assert upstream.requests == []


def test_images_only_in_user_messages(live_client, alice, upstream, settings):
    messages = [{"role": "system", "content": [part(HTTPS_URL)]},
                {"role": "user", "content": "hi"}]
    response = post(live_client, alice[1], settings, messages)
    assert response.status_code == 400
    assert "messages[0]" in response.json()["error"]["message"]


def _stored_images(services, user_id) -> list[list]:
    stores = services.stores
    (conversation,) = stores.chats.list(user_id)
    found = stores.images.of_conversation(user_id, conversation.id)
    return [[i.url or i.mime for i in found.get(m.id, [])]
            for m in stores.chats.messages(user_id, conversation.id)]


def test_a_stored_exchange_keeps_the_current_messages_images(live_client, alice, upstream,
                                                             settings, services):
    upstream.script(Reply(chunks=["A cat."]), Reply(chunks=["A cat."]), Reply(chunks=["Grey."]))
    first = [*ask(part(PNG_URL), part(HTTPS_URL, "low"))]
    for _ in range(2):  # the retry stores no more
        assert post(live_client, alice[1], settings, first).status_code == 200
    assert _stored_images(services, alice[0].id) == [["image/png", HTTPS_URL], []]
    later = [{"role": "user", "content": [{"type": "text", "text": "Before"}, part(HTTPS_URL)]},
             {"role": "assistant", "content": "Seen."},
             {"role": "user", "content": "Unnamed, new conversation?"}]
    assert post(live_client, alice[1], settings, later).status_code == 200
    conversations = services.stores.chats.list(alice[0].id)
    assert len(conversations) == 2
    root = settings.data_dir / "images" / alice[0].id
    assert [p.suffix for p in root.iterdir()] == [".png"]
    newest, first_stored = conversations  # most recently updated first
    found = services.stores.images.of_conversation(alice[0].id, newest.id)
    assert found == {}  # the earlier messages a request adds keep their text alone
    assert live_client.delete(f"/api/conversations/{first_stored.id}",
                              headers=alice[1]).status_code == 204
    assert list(root.iterdir()) == []


def test_store_false_keeps_no_image(live_client, alice, upstream, settings, services):
    upstream.script(Reply(chunks=["A cat."]))
    response = live_client.post("/v1/chat/completions", headers=alice[1], json={
        "model": settings.llm_model, "messages": ask(part(PNG_URL)), "store": False})
    assert response.status_code == 200
    assert services.stores.chats.count(alice[0].id) == 0
    assert not (settings.data_dir / "images").exists()
