"""POST /api/knowledge/upload: files made here, extracted and indexed by an upload job."""

import zipfile
from io import BytesIO

import anyio
import pytest
from litestar.testing import TestClient
from pypdf import PdfWriter

from chatsvc import Services, Settings, create_app
from chatsvc.indexing import UPLOAD
from chatsvc.testing import docx_bytes, pdf_bytes, wait_for_job
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
