"""Every limit and every kind of broken upload ends in its own DocumentError with a
message for the user, never in a library's exception."""

import io
import random
import struct
import time
import zipfile

import pytest
from pypdf import PdfReader, PdfWriter

from chatsvc._control import has_control
from chatsvc.documents import (
    CorruptDocument,
    DocumentError,
    DocumentTooLarge,
    EncryptedDocument,
    Kind,
    NoTextFound,
    UnsupportedDocument,
    ZipBomb,
    extract,
    sniff,
)
from chatsvc.testing import docx_bytes, pdf_bytes

MB = 2**20


def encrypted(pdf: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def rezipped(docx: bytes, name: str, chunks, *, count: int = 1) -> bytes:
    """`docx` with member `name` replaced by `count` times the concatenated `chunks`,
    written in a stream so the test never holds the unpacked size in memory."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx)) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            if member.filename != name:
                target.writestr(member, source.read(member))
        with target.open(name, "w", force_zip64=True) as stream:
            for _ in range(count):
                for chunk in chunks:
                    stream.write(chunk)
    return out.getvalue()


def test_over_the_byte_limit():
    with pytest.raises(DocumentTooLarge, match=r"has 0\.0 MB \(at most 0\.0 MB\)"):
        extract(b"x" * 100, Kind.TEXT, max_bytes=99)


def test_over_the_page_limit():
    with pytest.raises(DocumentTooLarge, match=r"3 pages \(at most 2\): split it"):
        extract(pdf_bytes(["a", "b", "c"]), Kind.PDF, max_pages=2)


@pytest.mark.parametrize("kind", [Kind.PDF, Kind.DOCX])
def test_over_the_character_limit(kind):
    text = "word " * 50
    data = pdf_bytes([text, text]) if kind is Kind.PDF else docx_bytes([text, text])
    with pytest.raises(DocumentTooLarge, match="characters"):
        extract(data, kind, max_chars=300)


def test_over_the_time_limit():
    with pytest.raises(DocumentTooLarge, match=r"took over 0 s by page 1 of 2"):
        extract(pdf_bytes(["a", "b"]), Kind.PDF, max_seconds=0)


def test_a_pdf_with_a_user_password_is_refused():
    with pytest.raises(EncryptedDocument, match="password-protected: remove the password"):
        extract(encrypted(pdf_bytes(["secret plans"]), "secret"), Kind.PDF)


def test_a_pdf_encrypted_without_a_user_password_is_read():
    assert extract(encrypted(pdf_bytes(["open plans"]), ""), Kind.PDF).text == "open plans"


def test_a_scanned_pdf_is_refused_saying_ocr_is_not_done():
    with pytest.raises(NoTextFound, match=r"2 page\(s\) but no text layer.*OCR\) is not done"):
        extract(pdf_bytes(["", ""]), Kind.PDF)


@pytest.mark.parametrize(("data", "kind"), [
    (b"", Kind.TEXT), (b"\n \n\t\n", Kind.MARKDOWN), (b"<html><script>x()</script>", Kind.HTML),
    (docx_bytes([]), Kind.DOCX),
])
def test_no_text_at_all(data, kind):
    with pytest.raises(NoTextFound, match="holds no text"):
        extract(data, kind)


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_a_truncated_pdf_is_corrupt(cut):
    data = pdf_bytes(["some text", "more text"])
    with pytest.raises(CorruptDocument, match=r"the PDF cannot be read .*truncated or damaged"):
        extract(data[: int(len(data) * cut)], Kind.PDF)


def test_a_truncated_docx_is_corrupt():
    data = docx_bytes(["text"])
    with pytest.raises(CorruptDocument, match="directory cannot be read"):
        sniff(data[: len(data) // 2])


def test_a_docx_with_broken_xml_is_corrupt():
    data = rezipped(docx_bytes(["text"]), "word/document.xml", [b"<w:document><oops"])
    with pytest.raises(CorruptDocument, match="the DOCX cannot be read"):
        extract(data, sniff(data))


def test_text_that_is_not_utf8_is_refused_when_called_directly():
    with pytest.raises(UnsupportedDocument, match="not UTF-8"):
        extract("Grüße".encode("latin-1"), Kind.TEXT)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A 300 MB document.xml deflated to well under 1 MB."""
    xml = b'<?xml version="1.0"?><w:document xmlns:w="x">' + b" " * (MB - 46)
    return rezipped(docx_bytes(["text"]), "word/document.xml", [xml], count=300)


def test_a_zip_bomb_is_refused_by_its_unpacked_size_before_unpacking(bomb):
    assert len(bomb) < 2 * MB
    started = time.process_time()
    with pytest.raises(ZipBomb, match=r"unpacks to 315,[\d,]+ bytes \(at most 104,857,600\)"):
        extract(bomb, sniff(bomb, "bomb.docx", None))
    assert time.process_time() - started < 0.5  # nothing was unpacked


def test_a_zip_bomb_under_the_size_limit_is_refused_by_its_ratio(bomb):
    with pytest.raises(ZipBomb, match=r"word/document.xml unpacks .* \(over 200 times\)"):
        extract(bomb, Kind.DOCX, max_unzipped_bytes=10**9)


def test_too_many_parts_is_a_zip_bomb():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("word/document.xml", "<w:document/>")
        for n in range(5001):
            archive.writestr(f"p{n}", "")
    with pytest.raises(ZipBomb, match="5,002 parts"):
        extract(out.getvalue(), Kind.DOCX)


def test_a_directory_that_understates_sizes_reads_as_damaged(bomb):
    """zipfile stops at the declared size and fails the CRC: the lie unpacks nothing
    beyond what the directory admitted."""
    entry = bomb.rindex(b"PK\x01\x02", 0, bomb.rindex(b"word/document.xml"))  # central
    assert struct.unpack_from("<I", bomb, entry + 24)[0] > 299 * MB  # its unpacked size
    lying = bomb[:entry + 24] + struct.pack("<I", 1000) + bomb[entry + 28:]
    with pytest.raises(CorruptDocument, match=r"the DOCX cannot be read.*CRC"):
        extract(lying, Kind.DOCX)


@pytest.mark.parametrize("data", [
    pdf_bytes(["Hello world", "中文测试"] * 3, title="t"),
    docx_bytes(["# h", "para", [["a", "b"]]]),
    b"<html><head><title>x</title></head><body><p>hi<ul><li>x</ul></body></html>",
], ids=["pdf", "docx", "html"])
def test_damaged_files_only_ever_raise_document_errors(data):
    """Random byte changes and cuts: a DocumentError, or text the knowledge routes take."""
    rng = random.Random(20)
    for _ in range(150):
        damaged = bytearray(data)
        for _ in range(rng.choice([1, 3, 10])):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        if rng.random() < 0.3:
            damaged = damaged[: rng.randrange(len(damaged))]
        try:
            doc = extract(bytes(damaged), sniff(bytes(damaged), None, None))
        except DocumentError:
            continue
        assert not has_control(doc.text + (doc.title or ""))
