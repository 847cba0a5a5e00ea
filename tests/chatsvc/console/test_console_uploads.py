"""Knowledge tab, indexing: files uploaded by drag and drop and the file picker, job
progress to done (or the job's error), pin, re-index, delete; a pinned upload enters the
prefix of the next new conversation once."""

from __future__ import annotations

import base64

import httpx
from playwright.sync_api import expect

from chatsvc.testing import docx_bytes, pdf_bytes
from tests.chatsvc.console.conftest import shot, sign_in, sticking_out

PDF = ("rota.pdf", "application/pdf",
       pdf_bytes(["The rota for team Kestrel changes on Mondays.",
                  "Night shifts are covered by the on-call engineer."], title="Kestrel rota"))
DOCX = ("handbook.docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        docx_bytes(["# Office handbook", "The office opens at nine and closes at six.",
                    "- Badges are collected at the front desk."], title="Office handbook"))

# A DataTransfer holding one File, as a drop from the desktop carries it.
DROPPED_FILE = """([name, type, b64]) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, { type }));
    return transfer;
}"""


def _drop(page, name: str, content_type: str, data: bytes) -> None:
    transfer = page.evaluate_handle(DROPPED_FILE,
                                    [name, content_type, base64.b64encode(data).decode()])
    page.dispatch_event("#kb-drop", "drop", {"dataTransfer": transfer})


def _pick(page, name: str, content_type: str, data: bytes) -> None:
    page.get_by_label("Files to upload").set_input_files(
        files=[{"name": name, "mimeType": content_type, "buffer": data}])


def _chat(live, headers, message: str, conversation_id: str | None = None) -> dict:
    return live.api("POST", "/api/chat", headers, json={
        "message": message, "conversation_id": conversation_id, "stream": False}).json()


def _expect_done(row) -> None:
    expect(row).to_have_attribute("data-status", "done", timeout=120_000)
    progress = row.get_by_role("progressbar")
    total = progress.get_attribute("max")
    expect(progress).to_have_js_property("value", float(total))
    expect(row.locator(".job-count")).to_have_text(f"{total} / {total}")


def test_uploads_reach_done_and_a_pin_changes_the_next_conversations_prefix_once(
        page, live, alice):
    _, headers = alice
    sign_in(page, live, headers, tab="knowledge")
    expect(page.locator("#kb-index-status")).to_have_text("Nothing waits for indexing")

    _drop(page, *PDF)
    _pick(page, *DOCX)
    rows = page.locator("#kb-jobs li.job")
    expect(rows).to_have_count(2)
    for name in ("rota", "handbook"):  # the file's name, then its document's title
        _expect_done(rows.filter(has_text=name))
    expect(page.locator("#kb-index-status")).to_have_text("Nothing waits for indexing")
    results = page.locator("#kb-results li")
    expect(results).to_have_count(2)  # the finished jobs refreshed the list
    expect(page.locator("#kb-stats")).to_contain_text("2 entries")
    shot(page, "knowledge-uploads")

    before = _chat(live, headers, "What changes on Mondays?")
    page.get_by_role("button", name="Kestrel rota").click()
    detail = page.locator("#kb-detail")
    expect(detail.locator("pre.content")).to_contain_text("team Kestrel")
    detail.get_by_role("button", name="Pin to new conversations").click()
    expect(detail.locator(".kb-pin")).to_contain_text("Pinned")
    pinned = live.api("GET", "/api/knowledge?pinned=true", headers).json()["entries"]
    assert [e["title"] for e in pinned] == ["Kestrel rota"]

    # The conversation from before the pin keeps its bytes; a new one has the document.
    assert _chat(live, headers, "And at night?", before["conversation_id"])[
        "prefix_hash"] == before["prefix_hash"]
    first = _chat(live, headers, "Who covers night shifts?")
    assert first["prefix_hash"] != before["prefix_hash"]
    assert {"type": "doc", "id": pinned[0]["id"]}.items() <= next(
        s for s in first["sources"] if s["type"] == "doc").items()
    for message in ("And on Mondays?", "Thanks"):
        turn = _chat(live, headers, message, first["conversation_id"])
        assert turn["prefix_hash"] == first["prefix_hash"]


def test_an_upload_sent_while_the_job_list_loads_keeps_its_row(page, live, alice):
    """The tab's job list, asked for before an upload and answered after it ended (a user
    who drops a file as the tab opens), must not wipe that upload's row."""
    _, headers = alice
    held = []
    page.route("**/api/knowledge/jobs?*", lambda route: held.append(route))
    sign_in(page, live, headers, tab="knowledge")
    while not held:
        page.wait_for_timeout(50)
    stale = held[0].fetch()  # the list as it is before the upload: empty
    _pick(page, "scan.pdf", "application/pdf", pdf_bytes(["", ""]))  # fails at once
    row = page.locator("#kb-jobs li.job")
    expect(row).to_have_attribute("data-status", "error", timeout=60_000)
    held[0].fulfill(response=stale)
    page.unroute("**/api/knowledge/jobs?*")
    expect(page.locator("#kb-index-status")).to_contain_text("1 recent job failed")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-status", "error")


def test_a_failed_upload_shows_why_and_reindex_and_delete_work_from_the_detail(
        page, live, alice):
    _, headers = alice
    sign_in(page, live, headers, tab="knowledge")
    _pick(page, "scan.pdf", "application/pdf", pdf_bytes(["", ""]))  # no text layer
    failed = page.locator("#kb-jobs li.job").first
    expect(failed).to_have_attribute("data-status", "error", timeout=60_000)
    expect(failed.locator(".job-error")).to_contain_text("text")
    expect(page.locator("#kb-index-status")).to_contain_text("1 recent job failed")

    _pick(page, *PDF)
    _expect_done(page.locator("#kb-jobs li.job").first)
    page.get_by_role("button", name="Kestrel rota").click()
    detail = page.locator("#kb-detail")
    detail.get_by_role("button", name="Re-index").click()
    _expect_done(detail.locator(".kb-entry-job li.job"))
    expect(page.locator("#kb-jobs li.job")).to_have_count(3)
    shot(page, "knowledge-reindex")
    page.set_viewport_size({"width": 390, "height": 844})  # job cards with a long error
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    assert sticking_out(page) == []
    shot(page, "narrow-knowledge-jobs")

    entry_id = live.api("GET", "/api/knowledge", headers).json()["entries"][0]["id"]
    page.once("dialog", lambda dialog: dialog.accept())
    detail.get_by_role("button", name="Delete").click()
    expect(detail).to_be_hidden()
    expect(page.locator("#kb-status")).to_have_text('Deleted "Kestrel rota".')
    expect(page.locator("#kb-results li")).to_have_count(0)
    gone = httpx.get(f"{live.url}/api/knowledge/{entry_id}", headers=headers)
    assert gone.status_code == 404


def test_jobs_started_before_a_reload_are_shown_with_their_state(page, live, alice):
    _, headers = alice
    upload = live.api("POST", "/api/knowledge/upload", headers,
                      files={"file": (DOCX[0], DOCX[2], DOCX[1])}).json()
    sign_in(page, live, headers, tab="knowledge")
    row = page.locator(f'#kb-jobs li[data-job="{upload["job_id"]}"]')
    _expect_done(row)
    expect(row).to_contain_text("Office handbook")


def test_a_job_this_page_started_leaves_the_list_once_newer_jobs_push_it_out(
        page, live, alice):
    """The list shows the 10 most recent jobs; a job the page started stays ahead of a list
    that does not have it yet, but not once the server's list has shown it."""
    _, headers = alice
    sign_in(page, live, headers, tab="knowledge")
    _pick(page, "scan.pdf", "application/pdf", pdf_bytes(["", ""]))  # fails at once
    started = page.locator("#kb-jobs li.job").first
    expect(started).to_have_attribute("data-status", "error", timeout=60_000)
    scan_job = started.get_attribute("data-job")
    page.get_by_role("tab", name="Chat").click()
    page.get_by_role("tab", name="Knowledge").click()  # the list has it now
    expect(page.locator(f'#kb-jobs li[data-job="{scan_job}"]')).to_have_count(1)
    for n in range(10):
        live.api("POST", "/api/knowledge/documents", headers,
                 json={"title": f"Note {n}", "content": f"Note number {n}."})
    page.get_by_role("tab", name="Chat").click()
    page.get_by_role("tab", name="Knowledge").click()
    expect(page.locator("#kb-jobs li.job")).to_have_count(10)
    expect(page.locator(f'#kb-jobs li[data-job="{scan_job}"]')).to_have_count(0)
