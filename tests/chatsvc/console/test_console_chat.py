"""Chat tab in a real browser: sign-in, streamed text as it arrives, sources, fallback."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chatsvc import Services, Settings, create_app
from chatsvc.testing import Reply
from tests.chatsvc.console.conftest import LiveServer, shot, sign_in

# Records every text the newest answer shows while it streams.
WATCH_ANSWER = """() => {
    window.answerHistory = [];
    const log = document.getElementById('transcript');
    new MutationObserver(() => {
        const answers = log.querySelectorAll('.msg-assistant .content');
        if (answers.length) window.answerHistory.push(answers[answers.length - 1].textContent);
    }).observe(log, { childList: true, characterData: true, subtree: true });
}"""


def test_sign_in_checks_the_token_and_keeps_it_for_the_tab(page, live, alice, console_errors):
    _, headers = alice
    page.goto(live.url)
    expect(page.get_by_role("tablist")).to_be_hidden()
    page.get_by_label("Bearer token").fill("not-a-token")
    page.get_by_label("Bearer token").press("Enter")
    expect(page.get_by_role("alert")).to_have_text("That token is not valid.")
    # The rejected /api/me is the one expected console error (Chromium logs the 401).
    assert [e for e in console_errors if "401" not in e] == []
    console_errors.clear()

    sign_in(page, live, headers)
    expect(page.locator("#whoami-name")).to_have_text("alice")
    assert page.evaluate("sessionStorage.getItem('chatsvc.token')") == headers[
        "Authorization"].split(" ", 1)[1]
    page.reload()
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Bearer token")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('chatsvc.token')") is None


def test_tabs_follow_the_keyboard(page, live, alice):
    sign_in(page, live, alice[1])
    page.get_by_role("tab", name="Chat").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Facts")).to_be_focused()
    expect(page.get_by_role("tab", name="Facts")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tabpanel")).to_have_attribute("id", "panel-facts")
    page.keyboard.press("End")
    expect(page.get_by_role("tab", name="Usage")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowRight")  # wraps around
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    assert page.evaluate("location.hash") == "#chat"


def test_the_sse_parser_handles_split_lines_comments_and_crlf(page, live):
    page.goto(live.url)
    events = page.evaluate("""async () => {
        const { createParser } = await import('/static/js/sse.js');
        const seen = [];
        const parser = createParser((e) => seen.push(e));
        for (const piece of [': ping\\r\\n\\r\\nevent: me', 'ta\\r', '\\ndata: {"a":',
                             '1}\\r\\n\\r', '\\ndata: one\\ndata:two\\n\\n',
                             'event: delta\\ndata: cut']) {
            parser.push(piece);
        }
        parser.end();
        return seen;
    }""")
    assert events == [{"event": "meta", "data": '{"a":1}'},
                      {"event": "message", "data": "one\ntwo"}]


def test_chat_streams_the_answer_as_it_arrives(page, live, alice, upstream):
    chunks = ["Hiking ", "in the ", "Alps ", "sounds ", "great."]
    upstream.script(Reply(chunks=chunks, chunk_delay=0.4))
    _, headers = alice
    fact = live.api("POST", "/api/facts", headers, json={
        "category": "core", "fact": "Alice loves hiking in the Alps"}).json()
    live.api("POST", "/api/fact-sheet/generate", headers)
    sign_in(page, live, headers)
    page.evaluate(WATCH_ANSWER)
    page.get_by_label("Message", exact=True).fill("Where should I go hiking?")
    page.get_by_label("Message", exact=True).press("Enter")

    answer = page.locator(".msg-assistant .content").last
    expect(answer).to_contain_text("Hiking in the")
    shot(page, "chat-streaming")
    expect(answer).to_have_text("".join(chunks))
    # The answer grew on screen chunk by chunk, not all at once at the end.
    shown = page.evaluate("window.answerHistory")
    partial = [text for text in dict.fromkeys(shown) if text and text != "".join(chunks)]
    assert len(partial) >= 3 and all("".join(chunks).startswith(t) for t in partial), shown
    message = page.locator(".msg-assistant").last
    expect(message.locator(".badge-rag")).to_have_text("rag")
    # The fact the answer was grounded on is listed under it, with its distance, and
    # again as a fact sheet entry of the stable prefix.
    region = message.get_by_role("region", name="Sources")
    found = f'li[data-type="fact"][data-id="{fact["id"]}"]'
    source = region.locator(f'{found}[data-layer="message"]')
    expect(source).to_contain_text("found for this message · distance 0.")
    expect(source.locator(".source-name")).to_have_text("Alice loves hiking in the Alps")
    stable = region.locator(f'{found}[data-layer="stable"]')
    expect(stable).to_contain_text("stable prefix")
    expect(stable.locator(".source-name")).to_have_text("Alice loves hiking in the Alps")
    expect(message.locator(".msg-foot")).to_contain_text("finish: stop")
    expect(page.locator("#conversation-list li")).to_have_count(1)
    assert upstream.requests[-1].body["messages"][-1]["content"] == "Where should I go hiking?"
    shot(page, "chat-done")

    # The conversation is kept server-side: reopen it from the list, then continue it.
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#transcript article")).to_have_count(0)
    page.locator("#conversation-list .open").filter(has_text="Where should I go hiking?").click()
    expect(page.locator("#transcript .content")).to_have_text(
        ["Where should I go hiking?", "".join(chunks)])
    upstream.script(Reply(chunks=["Chamonix."], report_usage=False))
    page.get_by_label("Message", exact=True).fill("Which town?")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator(".msg-assistant .content").last).to_have_text("Chamonix.")
    expect(page.locator(".msg-foot").last).to_contain_text("completion tokens (estimated)")
    sent = [m["content"] for m in upstream.requests[-1].body["messages"]]
    assert sent[-3:] == ["Where should I go hiking?", "".join(chunks), "Which town?"]
    expect(page.locator("#conversation-list li")).to_have_count(1)


@pytest.fixture
def embeddings_down(isolated_env, upstream, monkeypatch) -> Settings:
    """Ollama as the embedder, on a closed port: every turn must fall back."""
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("CHATSVC_EMBEDDINGS", "ollama")
    monkeypatch.setenv("OLLAMA_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CHATSVC_EMBED_TIMEOUT", "2")
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    return Settings.from_env()


def test_fallback_badge_when_embeddings_are_down(page, embeddings_down, upstream,
                                                console_errors):
    services = Services.open(embeddings_down)
    _, token = services.stores.users.add("carol")
    _, admin_token = services.stores.users.add("root", admin=True)
    upstream.script(Reply(chunks=["Here is ", "what I know."]))
    with LiveServer(create_app(services=services)) as server:
        server.api("POST", "/api/posts", {"Authorization": f"Bearer {admin_token}"}, json={
            "title": "Release 2.0 is out", "content": "Version 2.0 adds dark mode.",
            "published": True})
        sign_in(page, server, {"Authorization": f"Bearer {token}"})
        page.get_by_label("Message", exact=True).fill("What is new?")
        page.get_by_role("button", name="Send").click()
        message = page.locator(".msg-assistant").last
        expect(message.locator(".content")).to_have_text("Here is what I know.")
        expect(message.locator(".badge-fallback")).to_have_text("fallback")
        expect(message.locator(".notice")).to_contain_text("retrieval is unavailable")
        # The fallback answer is grounded on the latest published post, listed as its source.
        expect(message.locator('li[data-type="post"]')).to_contain_text("Release 2.0 is out")
        shot(page, "chat-fallback")
        # Fact search needs embeddings: the page says so instead of failing silently.
        page.get_by_role("tab", name="Facts").click()
        page.get_by_role("searchbox", name="Search facts").fill("anything")
        expect(page.locator("#fact-status")).to_contain_text("Search failed:")
        expect(page.locator("#fact-status")).to_contain_text("(HTTP 503)")
        assert console_errors and all("503" in e for e in console_errors), console_errors
        console_errors.clear()  # Chromium logs the expected 503
    services.stores.db.close()


def test_a_cut_answer_says_so_under_its_text(page, live, alice, upstream):
    upstream.script(Reply(chunks=["It all began ", "when"], finish_reason="length"),
                    Reply(chunks=["A whole answer."]))
    sign_in(page, live, alice[1])
    page.get_by_label("Message", exact=True).fill("Tell me everything")
    page.get_by_label("Message", exact=True).press("Enter")
    message = page.locator(".msg-assistant").last
    expect(message.locator(".msg-foot")).to_contain_text("finish: length")
    expect(message.get_by_role("status")).to_have_text(
        "Cut: the answer reached its length limit (LLM_MAX_TOKENS).")
    shot(page, "chat-cut")
    page.get_by_label("Message", exact=True).fill("Briefly, then")
    page.get_by_label("Message", exact=True).press("Enter")
    whole = page.locator(".msg-assistant").last
    expect(whole.locator(".msg-foot")).to_contain_text("finish: stop")
    expect(whole.locator(".cut")).to_have_count(0)
