"""Memory and Knowledge tabs in a real browser against the running service."""

from __future__ import annotations

import dataclasses
import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.chatsvc.console.conftest import shot, sign_in
from tests.chatsvc.knowledge_jobs import add_document


@pytest.fixture
def settings(settings):
    """A one-item memory baseline, so the preview has a semantic part to show."""
    return dataclasses.replace(settings, memory_baseline_max_items=1)


def test_memory_add_preview_and_soft_delete(page, live, alice):
    _, headers = alice
    sign_in(page, live, headers, tab="memory")
    expect(page.locator("#memory-status")).to_have_text("No memories yet.")

    form = page.locator("#memory-form")
    form.get_by_label("Content").fill("Answer in short bullet points")
    form.get_by_label("Type").select_option("instruction")
    form.get_by_role("button", name="Add memory").click()
    memories = page.locator("#memory-list li")
    expect(memories).to_have_count(1)
    expect(form.get_by_label("Content")).to_have_value("")
    form.get_by_label("Content").fill("Uses PostgreSQL for the billing service")
    form.get_by_label("Type").select_option("note")
    form.get_by_label("Scope").select_option("project")
    form.get_by_label("Project id").fill("billing")
    form.get_by_role("button", name="Add memory").click()
    expect(memories).to_have_count(2)
    expect(page.locator("#memory-list")).to_contain_text("project: billing")

    preview = page.locator("#preview-form")
    preview.get_by_label("Project id").fill("billing")
    preview.get_by_label("Query text").fill("which database does billing use?")
    preview.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-result")).to_be_visible()
    stable, semantic = page.locator("#preview-stable li"), page.locator("#preview-semantic li")
    expect(stable).to_have_count(1)
    expect(stable).to_contain_text("Answer in short bullet points")  # instructions rank first
    expect(semantic).to_have_count(1)
    expect(semantic).to_contain_text("PostgreSQL")
    expect(semantic).to_contain_text(re.compile(r"distance \d\.\d{3}"))
    expect(page.locator("#preview-meta")).to_contain_text("semantic")
    expect(page.locator("#preview-meta")).to_contain_text("stable prefix hash")
    shot(page, "memory")

    page.get_by_role("button", name="Delete memory: Answer in short bullet points").click()
    expect(memories).to_have_count(1)
    expect(page.locator("#memory-list")).not_to_contain_text("bullet points")
    preview.get_by_role("button", name="Preview").click()
    expect(stable).to_contain_text("PostgreSQL")  # soft-deleted: never injected again
    expect(page.locator("#preview-stable")).not_to_contain_text("bullet points")


def test_memory_form_shows_errors_and_keeps_markup_as_text(page, live, alice, console_errors):
    sign_in(page, live, alice[1], tab="memory")
    form = page.locator("#memory-form")
    form.get_by_label("Content").fill("   ")
    form.get_by_role("button", name="Add memory").click()
    expect(form.get_by_role("alert")).to_contain_text("(HTTP 400)")
    assert all("400" in e for e in console_errors), console_errors  # Chromium logs the 400
    console_errors.clear()

    # Stored text is shown as text, never parsed as HTML.
    markup = '<img src="/nope" onerror="window.pwned = 1">'
    form.get_by_label("Content").fill(markup)
    form.get_by_role("button", name="Add memory").click()
    expect(page.locator("#memory-list .memory-content")).to_have_text(markup)
    expect(page.locator("#memory-list img")).to_have_count(0)
    assert page.evaluate("window.pwned") is None


DOCS = [
    ("Deploying with Docker", "document",
     "To deploy the service build the Docker image and run it with the data volume mounted. "
     "The container listens on port 8000 and keeps its SQLite database under /data."),
    ("retry.py", "code",
     "def retry(fn, attempts=3):\n    for attempt in range(attempts):\n        try:\n"
     "            return fn()\n        except IOError:\n            continue\n"),
]


def test_knowledge_stats_search_modes_and_entry_detail(page, live, alice):
    _, headers = alice
    with httpx.Client(base_url=live.url, timeout=30) as http:
        for title, source_type, content in DOCS:
            add_document(http, headers, {"title": title, "content": content,
                                         "source_type": source_type})
    sign_in(page, live, headers, tab="knowledge")
    expect(page.locator("#kb-stats")).to_contain_text("2 entries")
    expect(page.locator("#kb-results li")).to_have_count(2)

    searches: list[dict] = []
    page.on("request", lambda r: r.url.endswith("/api/knowledge/search")
            and searches.append(r.post_data_json))
    page.get_by_role("searchbox", name="Search the knowledge base").fill("docker container port")
    page.get_by_text("Keyword", exact=True).click()
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.locator("#kb-results li")
    expect(results.first).to_contain_text("Deploying with Docker")
    assert searches[-1]["mode"] == "keyword"
    page.get_by_text("Semantic", exact=True).click()  # a mode change searches again
    expect(page.locator("#kb-status")).to_contain_text("results")
    assert searches[-1]["mode"] == "semantic"

    page.get_by_label("Source type").select_option("code")
    expect(results).to_have_count(1)
    expect(results.first).to_contain_text("retry.py")
    assert searches[-1]["source_type"] == "code"
    page.get_by_label("Source type").select_option("")

    page.get_by_role("button", name="Deploying with Docker").first.click()
    detail = page.locator("#kb-detail")
    expect(detail.get_by_role("heading", name="Deploying with Docker")).to_be_focused()
    for section in ("Abstract", "Overview", "Full content"):
        expect(detail.get_by_role("heading", name=section)).to_be_visible()
    expect(detail.locator("pre.content")).to_have_text(DOCS[0][2])
    expect(detail).not_to_contain_text("null")
    shot(page, "knowledge")


def test_knowledge_entry_is_pinned_and_unpinned_from_its_detail(page, live, alice):
    _, headers = alice
    title, _, content = DOCS[0]
    with httpx.Client(base_url=live.url, timeout=30) as http:  # the tab polls unfinished jobs
        entry_id = add_document(http, headers, {"title": title, "content": content})["id"]
    sign_in(page, live, headers, tab="knowledge")
    page.get_by_role("button", name=title).first.click()
    detail = page.locator("#kb-detail")
    expect(detail.locator(".kb-pin")).to_contain_text("Not pinned")
    detail.get_by_role("button", name="Pin to new conversations").click()
    expect(detail.locator(".kb-pin")).to_contain_text("Pinned")
    expect(page.locator("#kb-results li").first).to_contain_text("pinned")
    pinned = live.api("GET", "/api/knowledge?pinned=true", headers).json()["entries"]
    assert [e["id"] for e in pinned] == [entry_id]
    detail.get_by_role("button", name="Unpin").click()
    expect(detail.locator(".kb-pin")).to_contain_text("Not pinned")
    assert live.api("GET", "/api/knowledge?pinned=true", headers).json()["entries"] == []
