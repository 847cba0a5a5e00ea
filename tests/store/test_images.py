"""Message images on both backends: stored with their message in order, scoped by user,
gone with their conversation or user."""

from __future__ import annotations

import pytest

from store import NotFound
from store.images import ImageIn

PNG = ImageIn(sha256="ab" * 32, mime="image/png", size=67)
URL = ImageIn(url="https://example.com/cat.jpg", detail="low")


@pytest.fixture
def alice(users):
    return users.add("alice")[0].id


@pytest.fixture
def bob(users):
    return users.add("bob")[0].id


def test_images_are_stored_with_their_message_in_order(stores, alice):
    conversation, question = stores.chats.start_turn(alice, "look", images=[URL, PNG])
    shown = stores.images.of_conversation(alice, conversation.id)
    assert list(shown) == [question.id]
    first, second = shown[question.id]
    assert (first.url, first.detail, first.sha256, first.position) == (URL.url, "low", None, 0)
    assert (second.sha256, second.mime, second.size, second.url) == (PNG.sha256, "image/png",
                                                                     67, None)
    assert stores.images.get(alice, second.id) == second
    assert stores.images.file_hashes(alice) == {PNG.sha256}


def test_another_users_image_is_not_found(stores, alice, bob):
    conversation, question = stores.chats.start_turn(alice, "look", images=[PNG])
    image = stores.images.of_conversation(alice, conversation.id)[question.id][0]
    with pytest.raises(NotFound):
        stores.images.get(bob, image.id)
    assert stores.images.of_conversation(bob, conversation.id) == {}
    assert stores.images.file_hashes(bob) == set()


def test_images_go_with_their_conversation_and_their_user(stores, alice):
    first, _ = stores.chats.start_turn(alice, "one", images=[PNG, URL])
    second, question = stores.chats.start_turn(alice, "two", images=[PNG])
    stores.chats.delete(alice, first.id)
    assert stores.images.file_hashes(alice) == {PNG.sha256}  # the second still shows it
    assert len(stores.images.of_conversation(alice, second.id)[question.id]) == 1
    stores.accounts.delete(alice)
    assert stores.db.scalar("SELECT count(*) FROM message_images", {}) == 0


def test_an_image_is_a_url_or_a_file_never_both(stores, alice):
    from store import StoreError

    with pytest.raises(StoreError):
        stores.chats.start_turn(alice, "x", images=[ImageIn(url="https://a/b", sha256="cd")])
    assert stores.chats.count(alice) == 0  # the message went with it
