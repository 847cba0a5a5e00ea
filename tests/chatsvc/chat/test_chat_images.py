"""Images on /api/chat: stored by reference or as files, sent to a vision upstream with
their message (again with the history on later turns), shown and served to their owner
only, gone with their conversation or user; refused with nothing stored otherwise."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from chatsvc import Settings
from chatsvc.reindex import backfill
from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import HTTPS_URL, PNG, PNG_URL, read_events

GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
GIF_URL = "data:image/gif;base64," + base64.b64encode(GIF).decode()


@pytest.fixture
def settings(vision_settings) -> Settings:
    return vision_settings


def send(client, headers, images, *, message="What is this?", conversation_id=None):
    body = {"message": message, "stream": False, "images": images}
    if conversation_id:
        body["conversation_id"] = conversation_id
    return client.post("/api/chat", json=body, headers=headers)


def files(settings) -> list[str]:
    root = settings.data_dir / "images"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def question(client, headers, conversation_id) -> dict:
    messages = client.get(f"/api/conversations/{conversation_id}", headers=headers).json()
    return messages["messages"][0]


def test_images_reach_the_upstream_and_are_kept_with_their_message(client, alice, upstream,
                                                                   settings):
    upstream.script(Reply(chunks=["A cat."]))
    images = [{"url": PNG_URL}, {"url": HTTPS_URL, "detail": "high"}]
    response = send(client, alice[1], images)
    assert response.status_code == 200, response.text
    assert upstream.requests[0].body["messages"][-1] == {"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
        {"type": "image_url", "image_url": {"url": HTTPS_URL, "detail": "high"}}]}
    shown = question(client, alice[1], response.json()["conversation_id"])
    assert shown["content"] == "What is this?"
    file, ref = shown["images"]
    assert (file["kind"], file["mime"], file["size"]) == ("file", "image/png", len(PNG))
    assert ref == {"id": ref["id"], "kind": "url", "url": HTTPS_URL, "mime": None,
                   "size": None, "detail": "high"}
    served = client.get(file["url"], headers=alice[1])
    assert served.status_code == 200 and served.content == PNG
    assert served.headers["content-type"] == "image/png"
    redirect = client.get(f"/api/images/{ref['id']}", headers=alice[1],
                          follow_redirects=False)
    assert (redirect.status_code, redirect.headers["location"]) == (302, HTTPS_URL)
    assert len(files(settings)) == 1 and files(settings)[0].endswith(".png")


def test_the_next_turn_sends_the_earlier_images_again_and_the_text_alone_is_indexed(
        client, alice, upstream, settings, services):
    upstream.script(Reply(chunks=["A cat."]), Reply(chunks=["Grey."]))
    first = send(client, alice[1], [{"url": PNG_URL}], message="Look at my zebra photo").json()
    send(client, alice[1], [], message="What colour is it?",
         conversation_id=first["conversation_id"])
    one, two = (r.body["messages"] for r in upstream.requests)
    assert one[-1] in two  # from the file, as it was sent: the request extends the last
    assert two[0] == one[0] and two[-1] == {"role": "user", "content": "What colour is it?"}
    asyncio.run(backfill(services.stores.messages, services.embedder))
    found = client.get("/api/conversations/search", params={"q": "zebra photo"},
                       headers=alice[1]).json()["results"]
    assert "Look at my zebra photo" in [r["content"] for r in found]
    assert not any("base64" in r["content"] for r in found)


def test_another_user_gets_404_for_the_image_and_its_conversation(client, alice, bob,
                                                                 upstream):
    upstream.script(Reply(chunks=["ok"]))
    sent = send(client, alice[1], [{"url": PNG_URL}, {"url": HTTPS_URL}]).json()
    file, ref = question(client, alice[1], sent["conversation_id"])["images"]
    for image in (file, ref):
        assert client.get(f"/api/images/{image['id']}", headers=bob[1],
                          follow_redirects=False).status_code == 404
    assert client.get(f"/api/conversations/{sent['conversation_id']}",
                      headers=bob[1]).status_code == 404
    assert client.get("/api/images/nope", headers=alice[1]).status_code == 404


@pytest.mark.parametrize("vision", ["false"])
def test_vision_off_is_a_400_and_nothing_is_stored(client, alice, upstream, services,
                                                   settings):
    response = send(client, alice[1], [{"url": PNG_URL}])
    assert response.status_code == 400
    assert "images[0]" in response.json()["detail"]
    assert "LLM_VISION=true" in response.json()["detail"]
    assert services.stores.chats.count(alice[0].id) == 0 and files(settings) == []
    assert upstream.requests == []


@pytest.mark.parametrize("images, field, says", [
    ([{"url": HTTPS_URL}] * 3, "images", "at most 2 images"),
    ([{"url": "data:image/png;base64," + base64.b64encode(PNG + bytes(1000)).decode()}],
     "images[0].url", "CHATSVC_MAX_IMAGE_BYTES"),
    ([{"url": PNG_URL}, {"url": "data:image/png;base64,@@@@"}], "images[1].url", "base64"),
    ([{"url": "data:application/pdf;base64,JVBERi0="}], "images[0].url", "not an image"),
    ([{"url": "http://example.com/a.png"}], "images[0].url", "https://"),
    (["https://example.com/a.png"], "images[0]", "must be"),
    ([{"url": HTTPS_URL, "extra": 1}], "images[0]", "must be"),
])
def test_an_image_past_the_rules_is_a_400_and_nothing_is_stored(client, alice, upstream,
                                                                services, settings, images,
                                                                field, says):
    response = send(client, alice[1], images)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert f"invalid value for {field}:" in detail and says in detail
    assert services.stores.chats.count(alice[0].id) == 0 and files(settings) == []
    assert upstream.requests == []


@pytest.mark.parametrize("images", [{"url": HTTPS_URL}, HTTPS_URL, 3])
def test_images_not_a_list_is_a_400(client, alice, services, images):
    response = send(client, alice[1], images)
    assert response.status_code == 400
    assert response.json()["detail"].startswith("invalid value for images: must be a list")
    assert services.stores.chats.count(alice[0].id) == 0


def test_a_turn_that_cannot_start_leaves_no_file(client, alice, bob, upstream, settings):
    upstream.script(Reply(chunks=["ok"]))
    theirs = send(client, bob[1], [], message="hello").json()["conversation_id"]
    response = send(client, alice[1], [{"url": PNG_URL}], conversation_id=theirs)
    assert response.status_code == 404
    assert files(settings) == []


def test_files_go_with_the_last_conversation_showing_them(client, alice, upstream, settings):
    upstream.script(*[Reply(chunks=["ok"])] * 3)
    one = send(client, alice[1], [{"url": PNG_URL}, {"url": GIF_URL}]).json()
    two = send(client, alice[1], [{"url": PNG_URL}]).json()
    kept = question(client, alice[1], two["conversation_id"])["images"][0]
    assert len(files(settings)) == 2  # the same PNG twice is one file
    assert client.delete(f"/api/conversations/{one['conversation_id']}",
                         headers=alice[1]).status_code == 204
    assert [f.rsplit(".", 1)[1] for f in files(settings)] == ["png"]
    assert client.get(kept["url"], headers=alice[1]).content == PNG
    assert client.delete(f"/api/conversations/{two['conversation_id']}",
                         headers=alice[1]).status_code == 204
    assert files(settings) == []
    assert client.get(kept["url"], headers=alice[1]).status_code == 404


def test_deleting_the_account_deletes_its_image_files(client, alice, bob, upstream, settings):
    upstream.script(*[Reply(chunks=["ok"])] * 2)
    send(client, alice[1], [{"url": PNG_URL}])
    send(client, bob[1], [{"url": PNG_URL}])
    assert len(files(settings)) == 2  # one per user
    response = client.request("DELETE", "/api/me", json={"confirm": "alice"}, headers=alice[1])
    assert response.status_code == 204
    assert [f.split("/")[0] for f in files(settings)] == [bob[0].id]
    assert not (settings.data_dir / "images" / alice[0].id).exists()


def test_deleting_a_front_end_deletes_its_end_users_image_files(client, services, admin,
                                                                upstream, settings):
    account, key = services.stores.users.add("webui", kind="service")
    upstream.script(*[Reply(chunks=["ok"])] * 2)
    for end_user in ("ana", "ben"):
        acting = {"Authorization": f"Bearer {key}", "X-Chatsvc-User": end_user}
        assert send(client, acting, [{"url": PNG_URL}]).status_code == 200
    assert len(files(settings)) == 2
    gone = client.delete(f"/api/admin/users/{account.id}", headers=admin[1])
    assert gone.status_code == 204, gone.text
    assert files(settings) == []


def test_a_file_that_cannot_be_written_loses_the_image_not_the_turn(client, alice, upstream,
                                                                    settings):
    (settings.data_dir / "images").write_text("in the way")  # no directory can go there
    upstream.script(Reply(chunks=["ok"]), Reply(chunks=["again"]))
    sent = send(client, alice[1], [{"url": PNG_URL}])
    assert sent.status_code == 200 and sent.json()["content"] == "ok"
    image = question(client, alice[1], sent.json()["conversation_id"])["images"][0]
    assert client.get(image["url"], headers=alice[1]).status_code == 404
    send(client, alice[1], [], message="and now?",
         conversation_id=sent.json()["conversation_id"])
    # Its text goes on as history, without the image it lost.
    assert {"role": "user", "content": "What is this?"} in upstream.requests[1].body["messages"]


def test_the_export_lists_each_messages_images(client, alice, bob, upstream):
    upstream.script(*[Reply(chunks=["ok"])] * 2)
    sent = send(client, alice[1], [{"url": PNG_URL}, {"url": HTTPS_URL}]).json()
    send(client, bob[1], [{"url": GIF_URL}])
    document = client.get("/api/export", headers=alice[1]).json()
    exported = document["conversations"][0]["messages"]
    assert exported[0]["images"] == question(client, alice[1],
                                             sent["conversation_id"])["images"]
    assert "images" not in exported[1]  # the answer
    assert "image/gif" not in json.dumps(document)  # bob's


def test_a_streamed_turn_carries_its_images_too(client, alice, upstream):
    upstream.script(Reply(chunks=["A ", "cat."]))
    events = read_events(client, alice[1], {"message": "And this?", "images": [{"url": PNG_URL}]})
    assert [e for e, _ in events][-1] == "done"
    assert upstream.requests[0].body["messages"][-1]["content"][1] == {
        "type": "image_url", "image_url": {"url": PNG_URL}}


def test_a_regenerated_answer_is_asked_with_its_questions_images(client, alice, upstream):
    upstream.script(Reply(chunks=["A cat."]), Reply(chunks=["A kitten."]))
    sent = send(client, alice[1], [{"url": PNG_URL}]).json()
    response = client.post(f"/api/conversations/{sent['conversation_id']}/regenerate",
                           json={"stream": False}, headers=alice[1])
    assert response.status_code == 200, response.text
    first, again = (r.body["messages"][-1] for r in upstream.requests)
    assert again == first and again["content"][1] == {
        "type": "image_url", "image_url": {"url": PNG_URL}}


def test_only_the_visible_branchs_images_go_with_the_history(client, alice, upstream):
    upstream.script(*[Reply(chunks=["ok"])] * 4)
    first = send(client, alice[1], [], message="Hello").json()
    conversation_id = first["conversation_id"]
    answer = client.get(f"/api/conversations/{conversation_id}",
                        headers=alice[1]).json()["messages"][1]
    send(client, alice[1], [{"url": PNG_URL}], message="Old branch",
         conversation_id=conversation_id)
    edited = client.post("/api/chat", headers=alice[1], json={
        "message": "New branch", "stream": False, "conversation_id": conversation_id,
        "parent_id": answer["id"], "images": [{"url": HTTPS_URL}]})
    assert edited.status_code == 200, edited.text
    send(client, alice[1], [], message="And now?", conversation_id=conversation_id)
    history = json.dumps(upstream.requests[-1].body["messages"])
    assert HTTPS_URL in history and PNG_URL not in history and "Old branch" not in history
    shown = client.get(f"/api/conversations/{conversation_id}", headers=alice[1]).json()
    assert [len(m.get("images", [])) for m in shown["messages"]] == [0, 0, 1, 0, 0, 0]
    exported = client.get("/api/export", headers=alice[1]).json()["conversations"][0]
    off = [m for m in exported["off_branch"] if m["role"] == "user"]
    assert off[0]["content"] == "Old branch" and off[0]["images"][0]["kind"] == "file"
