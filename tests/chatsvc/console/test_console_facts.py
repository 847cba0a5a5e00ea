"""Facts and fact sheet tabs in a real browser against the running service."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from chatsvc.testing import Reply
from tests.chatsvc.console.conftest import shot, sign_in

FACTS = [
    ("core", "Alice's name is Alice Martin and she lives in Lyon"),
    ("technical", "Alice writes Python and Rust every day"),
    ("project", "Alice is building a chess engine called Rookie"),
    ("transient", "Alice has a dentist appointment next Tuesday"),
]

# Records every text the Facts status line shows, however briefly.
WATCH_STATUS = """() => {
    window.statusHistory = [];
    const status = document.getElementById('fact-status');
    new MutationObserver(() => window.statusHistory.push(status.textContent))
        .observe(status, { childList: true, characterData: true, subtree: true });
}"""


def search_params(requests: list[str]) -> list[dict]:
    return [{k: v[0] for k, v in parse_qs(urlparse(url).query).items()} for url in requests]


def test_facts_search_with_debounce_strictness_and_clear(page, live, alice):
    _, headers = alice
    searches: list[str] = []
    page.on("request", lambda r: "/api/facts/search" in r.url and searches.append(r.url))
    sign_in(page, live, headers, tab="facts")
    box = page.get_by_role("searchbox", name="Search facts")

    box.fill("programming languages")  # no facts yet
    expect(page.get_by_role("status").filter(has_text="No matching facts found")).to_be_visible()
    for category, text in FACTS:
        live.api("POST", "/api/facts", headers, json={"category": category, "fact": text})
    page.get_by_role("button", name="Clear search").click()
    expect(box).to_have_value("")
    expect(page.locator(".fact-group h3")).to_have_text(
        ["core 1", "technical 1", "project 1", "transient 1"])
    shot(page, "facts-list")

    searches.clear()
    page.evaluate(WATCH_STATUS)
    box.press_sequentially("which programming languages", delay=40)
    results = page.get_by_role("list", name="Search results").locator("li")
    expect(results.first).to_contain_text("Python and Rust")
    # Debounced: one request once typing stops (a stall on a loaded machine may add one).
    assert 1 <= len(searches) <= 2, searches
    assert search_params(searches)[-1] == {
        "q": "which programming languages", "limit": "20", "max_distance": "1.0"}
    assert "Searching..." in page.evaluate("window.statusHistory")
    first = results.first
    expect(first.locator(".badge")).to_have_text("technical")
    expect(first.locator(".fact-distance")).to_have_text(re.compile(r"distance 0\.\d{3}"))
    expect(first.locator(".fact-time")).to_have_text("never")
    distances = [float(t.split()[1]) for t in results.locator(".fact-distance").all_inner_texts()]
    assert distances == sorted(distances) and max(distances) <= 1.0
    shot(page, "facts-search")

    # The strictness slider is keyboard operable; its value is sent as max_distance.
    slider = page.get_by_role("slider", name="Strictness (max distance)")
    slider.focus()
    for _ in range(4):
        page.keyboard.press("ArrowLeft")
    with page.expect_response(lambda r: "max_distance=0.5" in r.url):
        page.keyboard.press("ArrowLeft")
    expect(page.locator("#fact-strictness-value")).to_have_text("0.5")
    expect(page.locator("#fact-results")).not_to_have_attribute("aria-busy", "true")
    assert search_params(searches)[-1]["max_distance"] == "0.5"
    assert len(searches) <= 6, searches  # debounced: fewer than one per key press
    strict = [float(t.split()[1]) for t in results.locator(".fact-distance").all_inner_texts()]
    assert all(d <= 0.5 for d in strict)

    box.press("Escape")
    expect(box).to_have_value("")
    expect(page.locator(".fact-group")).to_have_count(4)


def test_fact_sheet_empty_then_generated(page, live, alice):
    _, headers = alice
    sign_in(page, live, headers, tab="factsheet")
    status = page.locator("#sheet-status")
    expect(status).to_contain_text("No fact sheet yet")
    for category, text in FACTS:
        live.api("POST", "/api/facts", headers, json={"category": category, "fact": text})
    page.get_by_role("button", name="Generate now").click()
    items = page.locator("#sheet-facts li")
    expect(items).to_have_count(len(FACTS))
    expect(page.locator("#sheet-summary")).to_contain_text(f"{len(FACTS)} facts · generated ")
    expect(status).to_be_hidden()
    for item in items.all():
        expect(item.locator(".badge-score")).to_have_text(re.compile(r"score \d+\.\d{3}"))
    categories = set(items.locator(".badge:not(.badge-score)").all_inner_texts())
    assert categories == {c for c, _ in FACTS}
    page.get_by_role("tab", name="Chat").click()
    page.get_by_role("tab", name="Fact sheet").click()  # reloads the stored sheet
    expect(items).to_have_count(len(FACTS))
    shot(page, "fact-sheet")


def test_extract_now_turns_a_chat_into_facts_with_their_extraction_time(page, live, alice,
                                                                        upstream):
    _, headers = alice
    upstream.script(Reply(chunks=["Noted."]))
    sign_in(page, live, headers)
    page.get_by_label("Message", exact=True).fill("I use Go at work.")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator(".msg-assistant .content")).to_have_text("Noted.")

    extracted = {"new_facts": [{"category": "technical", "fact": "Alice uses Go at work",
                                "evidence": [{"message": "m1", "quote": "I use Go at work."}]}],
                 "referenced": [], "superseded": [], "forget": []}
    upstream.script(Reply(chunks=[json.dumps(extracted)]))
    page.get_by_role("tab", name="Facts").click()
    expect(page.locator("#fact-status")).to_contain_text("No facts yet")
    page.get_by_role("button", name="Extract facts now").click()
    expect(page.locator("#fact-status")).to_have_text(
        "Extraction: 1 new, 0 referenced, 0 superseded")
    fact = page.locator(".fact-group li.fact")
    expect(fact).to_have_count(1)
    expect(fact).to_contain_text("Alice uses Go at work")
    expect(fact.locator(".fact-time time")).not_to_have_text("never")
    expect(fact.locator(".fact-quote q")).to_have_text("I use Go at work.")
    assert "I use Go at work." in json.dumps(upstream.requests[-1].body["messages"])
    shot(page, "facts-extracted")
    # The quote opens the conversation at the message it was copied from.
    fact.get_by_role("button", name="open conversation").click()
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    expect(page.locator(".msg-found")).to_contain_text("I use Go at work.")

    # Asked to forget it, the fact goes, and the tab says so and links the asking message.
    upstream.script(Reply(chunks=["Done, forgotten."]))
    page.get_by_label("Message", exact=True).fill("Please forget that I use Go.")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator(".msg-assistant .content").last).to_have_text("Done, forgotten.")
    upstream.script(Reply(chunks=[json.dumps({"new_facts": [], "referenced": [],
                                              "superseded": [], "forget": ["f1"]})]))
    page.get_by_role("tab", name="Facts").click()
    page.get_by_role("button", name="Extract facts now").click()
    expect(page.locator("#fact-status")).to_have_text(
        "Extraction: 0 new, 0 referenced, 0 superseded · 1 forgotten")
    expect(page.locator(".fact-group:not(.fact-forgotten)")).to_have_count(0)
    forgotten = page.locator(".fact-forgotten li")
    expect(forgotten).to_contain_text("1 fact forgotten")
    forgotten.get_by_role("button", name="open what you asked").click()
    expect(page.locator(".msg-found")).to_contain_text("Please forget that I use Go.")
