"""POST /api/knowledge/upload: files made here, extracted and indexed by an upload job."""

import json
import zipfile
from io import BytesIO

import anyio
import pytest
from litestar.testing import TestClient
from pypdf import PdfWriter

from chatsvc import Services, Settings, create_app
from chatsvc.documents import extract, sniff
from chatsvc.indexing import UPLOAD
from chatsvc.testing import Reply, docx_bytes, pdf_bytes, wait_for_job
from store import Payload

FILES = {
    "notes.md": (b"# Rota notes\n\nThe rota for team Kestrel changes on Mondays.\n",
                 "text/markdown", "Rota notes"),
    "notes.txt": (b"The rota for team Kestrel changes on Mondays.\n", "text/plain", "notes.txt"),
    "page.html": (b"<html><head><title>Rota page</title></head><body><p>The rota for team "
                  b"Kestrel changes on Mondays.</p></body></html>", "text/html", "Rota page"),
    "rota.pdf": (pdf_bytes(["The rota for team Kestrel", "changes on Mondays."],
                           title="Rota PDF"), "application/pdf", "Rota PDF"),
    "rota.docx": (docx_bytes(["# Rota", "The rota for team Kestrel changes on Mondays."],
                             title="Rota DOCX"),
                  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                  "Rota DOCX"),
}


def _upload(client, headers, name, data, content_type="application/octet-stream", **form):
    return client.post("/api/knowledge/upload", headers=headers, data=form,
                       files={"file": (name, data, content_type)})


@pytest.mark.parametrize("name", FILES)
def test_each_format_becomes_a_searchable_embedded_entry(client, services, alice, name):
    _user, headers = alice
    data, content_type, title = FILES[name]
    response = _upload(client, headers, name, data, content_type)
    assert response.status_code == 202, response.text
    body = response.json()
    job = wait_for_job(client, headers, body["job_id"])
    assert (job["status"], job["entry_id"], job["error"]) == ("done", body["entry_id"], None)
    entry = client.get(f"/api/knowledge/{body['entry_id']}", headers=headers).json()
    assert entry["title"] == title and "Kestrel" in entry["content"]
    assert services.stores.knowledge.pending_count(body["entry_id"]) == 0
    assert services.stores.jobs.payload(body["job_id"]) is None  # the bytes went


def _encrypted() -> bytes:
    writer = PdfWriter(clone_from=BytesIO(pdf_bytes(["Secret rota"])))
    writer.encrypt("open sesame")
    buffer = BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _bomb() -> bytes:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document>" + " " * 300_000_000)
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "data", "says"), [
    ("scan.pdf", pdf_bytes(["", ""]), "text"),
    ("broken.pdf", pdf_bytes(["Some text"])[:200], "damaged"),
    ("photo.txt", b"\x89PNG\r\n\x1a\n" + bytes(200), "PNG"),
    ("bomb.docx", _bomb(), "unpack"),
    ("locked.pdf", _encrypted(), "password"),
])
def test_bad_files_end_the_job_in_error_saying_why_and_leave_no_entry(
        client, services, alice, name, data, says):
    _user, headers = alice
    response = _upload(client, headers, name, data)
    assert response.status_code == 202, response.text
    body = response.json()
    job = wait_for_job(client, headers, body["job_id"])
    assert job["status"] == "error" and says.lower() in job["error"].lower(), job
    assert client.get(f"/api/knowledge/{body['entry_id']}", headers=headers).status_code == 404


def test_a_file_over_the_limit_is_refused_with_413(monkeypatch, local_embedder):
    monkeypatch.setenv("CHATSVC_UPLOAD_MAX_BYTES", "1000")
    opened = Services.open(Settings.from_env(), embedder=local_embedder)
    token = opened.stores.users.add("carol")[1]
    with TestClient(create_app(services=opened)) as test_client:
        response = _upload(test_client, {"Authorization": f"Bearer {token}"}, "big.txt",
                           b"x" * 2000, "text/plain")
        small = _upload(test_client, {"Authorization": f"Bearer {token}"}, "ok.txt",
                        b"x" * 900, "text/plain")
    opened.stores.db.close()
    assert (response.status_code, small.status_code) == (413, 202)


def test_a_job_interrupted_mid_way_resumes_from_its_stored_file(services, alice):
    user, _headers = alice
    data, content_type, _title = FILES["rota.pdf"]
    saved = anyio.run(lambda: services.knowledge.save(
        owner_id=user.id, title="rota.pdf", content="", source_type="document",
        source_id="upload:crash"))
    job = services.stores.jobs.create(
        user.id, kind=UPLOAD, entry_id=saved.entry.id,
        payload=Payload("rota.pdf", content_type, data,
                        '{"source_id": "upload:crash", "title": null, '
                        '"source_type": "document", "pinned": false, "project_id": null}'))
    services.stores.jobs.start(job.id, total=2)  # its process died here
    anyio.run(services.indexer.run_once)
    finished = services.stores.jobs.get(user.id, job.id)
    assert (finished.status, finished.entry_id) == ("done", saved.entry.id), finished
    assert services.stores.knowledge.read(saved.entry.id).chunks >= 1
    assert services.stores.knowledge.pending_count(saved.entry.id) == 0


def test_a_pinned_upload_is_pinned_once_its_text_is_in(client, alice):
    _user, headers = alice
    data, content_type, _title = FILES["rota.docx"]
    body = _upload(client, headers, "rota.docx", data, content_type, pinned="true").json()
    assert wait_for_job(client, headers, body["job_id"])["status"] == "done"
    entry = client.get(f"/api/knowledge/{body['entry_id']}", headers=headers).json()
    assert entry["pinned"] is True and "Kestrel" in entry["content"]


def test_an_upload_job_whose_file_is_gone_ends_in_error(services, alice):
    user, _headers = alice
    job = services.stores.jobs.create(user.id, kind=UPLOAD)  # no payload stored
    anyio.run(services.indexer.run_once)
    finished = services.stores.jobs.get(user.id, job.id)
    assert (finished.status, finished.error) == ("error",
                                                 "the uploaded file is gone; upload it again")


def _multipart(parts: list[tuple[str, bytes]], newline: bytes = b"\r\n",
               boundary: bytes = b"b0undary", close: bool = True) -> bytes:
    """A multipart body written by hand: (header lines, data) per part."""
    body = b""
    for headers, data in parts:
        body += b"--" + boundary + newline + headers.encode().replace(b"\n", newline)
        body += newline + newline + data + newline
    return body + (b"--" + boundary + b"--" + newline if close else b"")


def _post_raw(client, headers, body: bytes):
    return client.post("/api/knowledge/upload", content=body, headers={
        **headers, "Content-Type": 'multipart/form-data; boundary="b0undary"'})


@pytest.mark.parametrize("newline", [b"\r\n", b"\n"], ids=["crlf", "lf"])
def test_hand_written_multipart_bodies_are_read_as_sent(client, alice, newline):
    _user, headers = alice
    text = b"The rota for team Kestrel changes on Mondays.\r\n\r\n--b0und but not the boundary\n"
    response = _post_raw(client, headers, _multipart([
        ('Content-Disposition: form-data; name="title"', "Rota für alle".encode()),
        ("Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''caf%C3%A9.txt\n"
         "Content-Type: text/plain", text),
    ], newline))
    assert response.status_code == 202, response.text
    job = wait_for_job(client, headers, response.json()["job_id"])
    assert job["status"] == "done", job
    entry = client.get(f"/api/knowledge/{job['entry_id']}", headers=headers).json()
    assert entry["title"] == "Rota für alle"
    assert "Kestrel" in entry["content"] and "--b0und but not the boundary" in entry["content"]


def test_a_base64_part_is_decoded(client, alice):
    _user, headers = alice
    response = _post_raw(client, headers, _multipart([
        ('Content-Disposition: form-data; name="file"; filename="notes.txt"\n'
         "Content-Transfer-Encoding: base64", b"VGhlIHJvdGEgZm9yIHRlYW0gS2VzdHJlbC4=")]))
    assert response.status_code == 202, response.text
    job = wait_for_job(client, headers, response.json()["job_id"])
    entry = client.get(f"/api/knowledge/{job['entry_id']}", headers=headers).json()
    assert entry["content"].strip() == "The rota for team Kestrel."


@pytest.mark.parametrize("body", [
    _multipart([('Content-Disposition: form-data; name="file"; filename="a.txt"', b"x")],
               close=False),
    b"--b0undary--\r\n",
    b"no boundary here",
    b"--b0undary\r\nContent-Disposition: form-data; name=\"file\"\r\n--b0undary--\r\n",
], ids=["unclosed", "no parts", "no delimiter", "no blank line"])
def test_a_broken_multipart_body_is_a_400_and_creates_no_job(client, alice, body):
    _user, headers = alice
    response = _post_raw(client, headers, body)
    assert response.status_code == 400, response.text
    assert "multipart" in response.text
    assert client.get("/api/knowledge/jobs", headers=headers).json()["jobs"] == []


@pytest.mark.parametrize("boundary", ["boundary*=utf-8''%E2%82%AC", "boundary*=bogus''%FF"])
def test_a_boundary_no_bytes_can_match_is_a_400(client, alice, boundary):
    _user, headers = alice  # RFC 2231 decodes these past latin-1
    response = client.post("/api/knowledge/upload", content=b"--\xe2\x82\xac--\r\n", headers={
        **headers, "Content-Type": f"multipart/form-data; {boundary}"})
    assert response.status_code == 400, response.text
    assert "multipart" in response.text


# -- summaries (L0/L1) -------------------------------------------------------------------

# A rules sheet as a PDF prints it (numbered rules, a number alone on its line, the
# title on the first line) and as a DOCX writes it (a heading, bullets, a table).
RULES = ["Plots are assigned each March by lottery among the members who have paid "
         "their yearly fee", "Water only in the early morning or the evening",
         "Compost bins are shared and must never hold cooked food."]
ZH_RULES = ["每年三月通过抽签分配地块，只有已缴年费的会员可以参加。", "只能在清晨或傍晚浇水。",
            "堆肥箱由大家共用，不得放入熟食。"]
SHEETS = {
    "rules.pdf": pdf_bytes([
        "Hartwell Community Garden: Plot Rules 2026\n1. Plots are assigned each March by "
        "lottery among the\nmembers who have paid their yearly fee.\n2. Water only in the "
        "early morning or the evening.\n3.", f"{RULES[2]}\n4. Paths stay clear."],
        title="Plot Rules 2026"),
    "rules.docx": docx_bytes(["# Hartwell Community Garden: Plot Rules 2026",
                              *(f"- {rule}" for rule in RULES[:2]),
                              [["Plot", "Holder"], ["12", "Ada"]], RULES[2]],
                             title="Plot Rules 2026"),
    "规则.pdf": pdf_bytes([f"哈特韦尔社区花园地块规则\n一、{ZH_RULES[0]}\n二、{ZH_RULES[1]}",
                          ZH_RULES[2]]),
}
READABLE = {
    "rules.pdf": f"{RULES[0]}. {RULES[1]}. {RULES[2]}",
    "rules.docx": f"{RULES[0]}. {RULES[1]}. {RULES[2]}",
    "规则.pdf": "".join(ZH_RULES),
}
QUERIES = {"rules.pdf": "cooked food", "rules.docx": "cooked food", "规则.pdf": "堆肥箱"}


@pytest.fixture
def llm_services(monkeypatch, upstream, local_embedder):
    """Services whose LLM is the scripted `upstream`, with LLM tiers on (the default)."""
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("LLM_RETRY_BACKOFF", "0.01")
    opened = Services.open(Settings.from_env(), embedder=local_embedder)
    yield opened
    opened.stores.db.close()


@pytest.fixture
def llm_client(llm_services):
    """(client, headers) of the app of `llm_services`."""
    token = llm_services.stores.users.add("dora")[1]
    with TestClient(create_app(services=llm_services)) as test_client:
        yield test_client, {"Authorization": f"Bearer {token}"}


def _uploaded_entry(client, headers, name) -> dict:
    body = _upload(client, headers, name, SHEETS[name]).json()
    job = wait_for_job(client, headers, body["job_id"])
    assert (job["status"], job["error"]) == ("done", None), job
    return client.get(f"/api/knowledge/{body['entry_id']}", headers=headers).json()


@pytest.mark.parametrize("name", ["rules.pdf", "rules.docx"])
def test_an_uploaded_document_gets_its_summaries_from_the_llm(llm_client, upstream, name):
    client, headers = llm_client
    upstream.script(Reply(chunks=[json.dumps({
        "abstract": "The garden's plot rules for 2026.",
        "overview": ["Plots by lottery in March", "Water mornings or evenings"]})]))
    entry = _uploaded_entry(client, headers, name)
    assert (entry["abstract"], entry["overview"], entry["tiers_by"]) == (
        "The garden's plot rules for 2026.",
        "- Plots by lottery in March\n- Water mornings or evenings", "llm")
    [request] = upstream.requests  # one call per document
    prompt = request.body["messages"][-1]["content"]
    assert prompt.startswith("Title: Plot Rules 2026")
    assert "yearly fee" in prompt and "cooked food" in prompt  # the file's text


@pytest.mark.parametrize("reply", [Reply(status=500), Reply(chunks=["Sorry, no JSON."])],
                         ids=["llm error", "unusable answer"])
@pytest.mark.parametrize("name", list(SHEETS))
def test_without_the_llm_an_upload_keeps_readable_extractive_summaries_and_stays_searchable(
        llm_client, upstream, name, reply):
    client, headers = llm_client
    upstream.script(*[reply] * 3)  # the first try and both retries
    entry = _uploaded_entry(client, headers, name)
    assert (entry["tiers_by"], entry["abstract"]) == ("extractive", READABLE[name])
    points = [line.removeprefix("- ") for line in entry["overview"].splitlines()]
    assert len(points) >= 2 and all(point[0] not in "0123456789一二-" for point in points)
    for mode in ("keyword", "hybrid"):
        hits = client.post("/api/knowledge/search", headers=headers,
                           json={"query": QUERIES[name], "mode": mode}).json()["results"]
        assert {hit["entry_id"] for hit in hits} == {entry["id"]}, (mode, hits)


def test_a_resumed_upload_job_asks_for_the_summaries_it_never_got(llm_services, upstream):
    user, _token = llm_services.stores.users.add("erin")
    data = SHEETS["rules.pdf"]
    doc = extract(data, sniff(data, "rules.pdf", "application/pdf"))
    # The job's process saved the text and died before the LLM answered.
    saved = anyio.run(lambda: llm_services.knowledge.save(
        owner_id=user.id, title=doc.title, content=doc.text, source_type="document",
        source_id="upload:crash"))
    job = llm_services.stores.jobs.create(
        user.id, kind=UPLOAD, entry_id=saved.entry.id,
        payload=Payload("rules.pdf", "application/pdf", data,
                        '{"source_id": "upload:crash", "title": null, '
                        '"source_type": "document", "pinned": false, "project_id": null}'))
    upstream.script(Reply(chunks=['{"abstract": "Plot rules.", "overview": ["Lottery"]}']))
    anyio.run(llm_services.indexer.run_once)
    assert llm_services.stores.jobs.get(user.id, job.id).status == "done"
    entry = llm_services.stores.knowledge.read(saved.entry.id)
    assert (entry.abstract, entry.tiers_by, len(upstream.requests)) == ("Plot rules.", "llm", 1)


def test_an_llm_that_never_answers_holds_an_upload_job_only_for_the_tier_timeout(
        monkeypatch, upstream, local_embedder):
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_TIER_TIMEOUT", "0.5")
    opened = Services.open(Settings.from_env(), embedder=local_embedder)
    token = opened.stores.users.add("fay")[1]
    upstream.script(Reply(hang=True))
    try:
        with TestClient(create_app(services=opened)) as client:
            entry = _uploaded_entry(client, {"Authorization": f"Bearer {token}"}, "rules.pdf")
        assert opened.stores.knowledge.pending_count(entry["id"]) == 0  # embedded after it
    finally:
        opened.stores.db.close()
    assert (entry["tiers_by"], entry["abstract"]) == ("extractive", READABLE["rules.pdf"])
