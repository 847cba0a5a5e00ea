"""The console's answers survive a page reload, and Stop ends them on the server."""

from __future__ import annotations

from playwright.sync_api import expect

from chatsvc.testing import Reply
from tests.chatsvc.console.conftest import sign_in

CHUNKS = [f"part{i} " for i in range(25)]


def ask(page, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")


def test_a_reload_mid_answer_re_attaches_and_shows_all_of_it(page, live, alice, upstream,
                                                             console_errors):
    upstream.script(Reply(chunks=CHUNKS, chunk_delay=0.15))
    sign_in(page, live, alice[1])
    ask(page, "Tell me a long story")
    expect(page.locator(".msg-assistant .content").last).to_contain_text("part2 ")
    page.reload()
    # The same conversation is open again, its answer followed from the server to the end.
    answer = page.locator(".msg-assistant").last
    expect(page.locator(".msg-user .content")).to_have_text(["Tell me a long story"])
    expect(answer.locator(".content")).to_have_text("".join(CHUNKS), timeout=20_000)
    expect(answer.locator(".msg-foot")).to_contain_text("finish: stop")
    expect(answer.locator(".badge-rag")).to_have_text("rag")
    assert upstream.closed_early == 0  # the reload did not cut the answer


def test_stop_ends_the_answer_on_the_server(page, live, alice, upstream):
    upstream.script(Reply(chunks=CHUNKS, chunk_delay=0.15))
    _, headers = alice
    sign_in(page, live, headers)
    ask(page, "Another long story")
    answer = page.locator(".msg-assistant").last
    expect(answer.locator(".content")).to_contain_text("part1 ")
    page.get_by_role("button", name="Stop").click()
    expect(answer).to_contain_text("Stopped.")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    conversation = live.api("GET", "/api/conversations", headers).json()["conversations"][0]
    stored = live.api("GET", f"/api/conversations/{conversation['id']}", headers).json()
    assert stored["messages"][-1]["status"] == "interrupted"
    assert stored["messages"][-1]["content"] != "".join(CHUNKS)
