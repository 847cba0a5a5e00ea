"""Chat tab's search over past conversations in a real browser: results with the query
marked, opening the conversation at the found message, empty state, per-user results."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from chatsvc.testing import Reply
from tests.chatsvc.console.conftest import shot, sign_in

ALICE = {"conversations": [
    {"title": "Pets", "messages": [
        {"role": "user", "content": "Good morning! Any tips for the garden this spring?",
         "name": "Alice", "created_at": "2024-03-02T08:00:00Z"},
        {"role": "assistant", "content": "Start with tomatoes and basil.",
         "created_at": "2024-03-02T08:00:04Z"},
        {"role": "user", "content": "My dog Biscuit learned to fetch the newspaper <b>today</b>.",
         "name": "Alice", "created_at": "2024-03-02T08:01:00Z"}]},
    {"title": "Work", "messages": [
        {"role": "user", "content": "I started a new job as a nurse at the city hospital.",
         "name": "Alice", "created_at": "2024-05-01T09:00:00Z"},
        {"role": "assistant", "content": "Congratulations on the new job!",
         "created_at": "2024-05-01T09:00:03Z"}]},
]}
BOB = {"conversations": [
    {"title": "Bob's secret", "messages": [
        {"role": "user", "content": "My parrot Biscuit speaks three languages.",
         "name": "Bob", "created_at": "2024-04-01T10:00:00Z"}]},
]}


def wait_until_indexed(live, headers, *, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = live.api("GET", "/api/conversations/index-status", headers).json()
        if status["indexed"] == status["messages"]:
            return status
        assert time.monotonic() < deadline, f"the background indexer did not catch up: {status}"
        time.sleep(0.2)


def test_search_opens_the_conversation_at_the_found_message(page, live, alice, bob):
    imported = live.api("POST", "/api/conversations/import", alice[1], json=ALICE).json()
    pets = imported["conversations"][0]
    bob_ids = live.api("POST", "/api/conversations/import", bob[1], json=BOB).json()
    bob_message = bob_ids["conversations"][0]["message_ids"][0]
    assert wait_until_indexed(live, alice[1]) == {"messages": 5, "indexed": 5}
    wait_until_indexed(live, bob[1])

    sign_in(page, live, alice[1])
    expect(page.locator("#conversation-list li")).to_have_count(2)
    expect(page.locator("#recall-index")).to_have_text("")  # all indexed: nothing to say
    box = page.get_by_role("searchbox", name="Search past conversations")
    box.fill("Biscuit newspaper")
    results = page.get_by_role("list", name="Matching messages")
    first = results.get_by_role("button").first
    expect(first).to_have_attribute("data-message-id", pets["message_ids"][2])
    expect(page.locator("#recall-status")).to_contain_text("messages found.")
    expect(first.locator(".recall-meta strong")).to_have_text("Alice")
    expect(first.locator("time")).to_have_attribute("datetime", "2024-03-02T08:01:00.000000Z")
    expect(first.locator(".recall-conversation")).to_have_text("in Pets")
    # The query's words are marked; the message's own markup stays text.
    expect(first.locator("mark")).to_have_text(["Biscuit", "newspaper"])
    expect(first.locator(".recall-snippet")).to_have_text(
        "My dog Biscuit learned to fetch the newspaper <b>today</b>.")
    assert first.locator(".recall-snippet b").count() == 0
    # Bob's message with the same word never shows up for Alice.
    expect(results.locator(f'[data-message-id="{bob_message}"]')).to_have_count(0)
    shown = results.locator("[data-conversation-id]")
    assert shown.count() > 0
    ids = {shown.nth(i).get_attribute("data-conversation-id") for i in range(shown.count())}
    assert ids <= {c["id"] for c in imported["conversations"]}, ids
    expect(results).not_to_contain_text("parrot")
    expect(page.locator("#conversation-list")).to_be_hidden()  # results take its place
    shot(page, "search-results")

    # Keyboard: Down from the box to the first result and back up, Enter opens it.
    box.press("ArrowDown")
    expect(first).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(results.get_by_role("button").nth(1)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(first).to_be_focused()
    page.keyboard.press("Enter")
    found = page.locator(f'#transcript article[data-message-id="{pets["message_ids"][2]}"]')
    expect(page.locator("#transcript .content")).to_have_text(
        [m["content"] for m in ALICE["conversations"][0]["messages"]])
    expect(found).to_have_class("msg msg-user msg-found")
    expect(found).to_be_focused()
    expect(found).to_be_in_viewport()
    expect(page.locator("#transcript .msg-found")).to_have_count(1)
    expect(first).to_have_attribute("aria-current", "true")
    expect(page.locator("#conversation-list")).to_be_hidden()
    shot(page, "search-opened")

    # Another result opens another conversation, highlighting that message instead.
    box.fill("nurse hospital job")
    work = imported["conversations"][1]
    expect(first).to_have_attribute("data-conversation-id", work["id"])
    first.click()
    expect(page.locator("#transcript .msg-found")).to_have_attribute(
        "data-message-id", first.get_attribute("data-message-id"))
    expect(page.locator("#transcript .content").first).to_have_text(
        "I started a new job as a nurse at the city hospital.")

    # Escape clears the search and brings the conversation list back.
    box.press("Escape")
    expect(box).to_have_value("")
    expect(results).to_be_hidden()
    expect(page.locator("#conversation-list li")).to_have_count(2)


def test_search_says_when_nothing_matches(page, live, make_user):
    _, headers = make_user("carol")
    sign_in(page, live, headers)
    box = page.get_by_role("searchbox", name="Search past conversations")
    box.fill("Biscuit")
    box.press("Enter")
    expect(page.locator("#recall-status")).to_have_text("No messages match “Biscuit”.")
    expect(page.get_by_role("list", name="Matching messages").locator("li")).to_have_count(0)
    shot(page, "search-empty")
    page.get_by_role("button", name="Clear conversation search").click()
    expect(page.locator("#recall-status")).to_have_text("")
    expect(box).to_be_focused()


def test_index_progress_and_keyword_fallback_are_shown(page, live, alice):
    live.api("POST", "/api/conversations/import", alice[1], json=ALICE)
    wait_until_indexed(live, alice[1])
    # The index lags behind (as right after an import) and embeddings are down.
    page.route("**/api/conversations/index-status",
               lambda route: route.fulfill(json={"messages": 5, "indexed": 2}))

    def keyword_only(route):
        body = route.fetch().json()
        body.update(mode="keyword", degraded_reason="embeddings unavailable: test")
        route.fulfill(json=body)

    page.route("**/api/conversations/search?*", keyword_only)
    sign_in(page, live, alice[1])
    expect(page.locator("#recall-index")).to_have_text("2 of 5 messages indexed")
    page.get_by_role("searchbox", name="Search past conversations").fill("Biscuit")
    expect(page.locator("#recall-status")).to_contain_text(
        "Only keyword search ran: embeddings unavailable: test.")
    expect(page.locator("#recall-status")).to_have_attribute("data-kind", "warn")
    shot(page, "search-degraded")


def test_a_full_page_of_results_says_it_is_the_top_of_more(page, live, alice):
    many = {"conversations": [{"title": f"Walk {n}", "messages": [
        {"role": "user", "content": f"Walk {n}: the heron stood by the canal again."}]}
        for n in range(25)]}
    live.api("POST", "/api/conversations/import", alice[1], json=many)
    wait_until_indexed(live, alice[1])
    sign_in(page, live, alice[1])
    page.get_by_role("searchbox", name="Search past conversations").fill("heron canal")
    expect(page.get_by_role("list", name="Matching messages").locator("li")).to_have_count(20)
    expect(page.locator("#recall-status")).to_have_text(
        "The top 20 matching messages (there may be more: refine the search).")


def test_an_answer_lists_recalled_messages_with_who_when_and_what(page, live, alice, upstream):
    imported = live.api("POST", "/api/conversations/import", alice[1], json=ALICE).json()
    biscuit = imported["conversations"][0]["message_ids"][2]
    wait_until_indexed(live, alice[1])
    upstream.script(Reply(chunks=["Biscuit fetches it."]))
    sign_in(page, live, alice[1])
    page.get_by_label("Message", exact=True).fill("What did my dog Biscuit learn to fetch?")
    page.get_by_label("Message", exact=True).press("Enter")
    region = page.locator(".msg-assistant").last.get_by_role("region", name="Sources")
    recalled = region.locator(f'li[data-type="message"][data-id="{biscuit}"]')
    expect(recalled.locator(".source-name strong")).to_have_text("Alice")
    expect(recalled.locator("time")).to_have_attribute("datetime", "2024-03-02T08:01:00.000000Z")
    # The message's markup stays text, as everywhere in the console.
    expect(recalled.locator(".source-text")).to_have_text(
        "My dog Biscuit learned to fetch the newspaper <b>today</b>.")
    expect(recalled).to_contain_text("found for this message · score 0.")
    shot(page, "chat-recalled-sources")
