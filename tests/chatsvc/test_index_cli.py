"""chatsvc index: idempotent by content hash, replaces changed files, drops removed ones."""

import re

import anyio

from chatsvc.cli import main
from chatsvc.cli._index import index_tree
from chatsvc.testing import docx_bytes, pdf_bytes


def _counts(services, root, pattern="**/*.md"):
    counts = anyio.run(index_tree, services.knowledge, root, pattern, "document")
    return {k: v for k, v in counts.items() if v}


def test_reindexing_skips_unchanged_replaces_changed_and_deletes_removed(services, tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Alpha\n\nAlpha talks about backups.")
    (docs / "sub" / "b.md").write_text("向量检索的中文说明。")
    (docs / "notes.txt").write_text("not matched by the glob")
    (docs / "empty.md").write_text("   ")
    store = services.knowledge.knowledge

    assert _counts(services, docs) == {"created": 2, "skipped": 1}
    entries, _ = store.list(viewer_id="anyone")
    assert {e.title for e in entries} == {"Alpha", "b"}
    assert all(e.owner_id is None for e in entries), "CLI entries are shared"
    assert store.unembedded(limit=10) == []

    assert _counts(services, docs) == {"unchanged": 2, "skipped": 1}

    (docs / "a.md").write_text("# Alpha\n\nAlpha now talks about restores.")
    (docs / "sub" / "b.md").unlink()
    assert _counts(services, docs) == {"replaced": 1, "removed": 1, "skipped": 1}
    assert [h.title for h in store.keyword("restores", viewer_id="x")] == ["Alpha"]
    assert store.keyword("backups", viewer_id="x") == []
    assert store.keyword("向量检索", viewer_id="x") == []
    assert store.stats(viewer_id="x")["total"] == 1


def test_index_command_end_to_end(services, tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "one.md").write_text("# One\n\nFirst file.")
    assert main(["index", str(docs), "--glob", "*.md", "--source-type", "code"]) == 0
    out = capsys.readouterr()
    assert "created 1" in out.out and "indexing 1/1 one.md" in out.err  # summary + progress
    assert main(["index", str(docs), "--glob", "*.md", "--source-type", "code"]) == 0
    assert "unchanged 1" in capsys.readouterr().out
    assert main(["index", str(tmp_path / "missing")]) == 2
    assert main(["index", str(docs), "--source-type", "Bad Type"]) == 2


def test_pdf_and_docx_files_are_read_like_uploads_and_bad_ones_skipped(services, tmp_path):
    (tmp_path / "rota.pdf").write_bytes(pdf_bytes(["Kestrel rota"], title="Rota PDF"))
    (tmp_path / "rota.docx").write_bytes(docx_bytes(["# Rota DOCX", "Kestrel rota"]))
    (tmp_path / "scan.pdf").write_bytes(pdf_bytes([""]))  # no text layer
    assert _counts(services, tmp_path, "*") == {"created": 2, "skipped": 1}
    hits = services.knowledge.knowledge.keyword("Kestrel", viewer_id="x")
    assert sorted(h.title for h in hits) == ["Rota DOCX", "Rota PDF"]


def test_each_file_shows_its_chunks_embedded_like_a_job(services, tmp_path, capsys,
                                                       monkeypatch):
    monkeypatch.setenv("CHATSVC_CHUNK_MAX_CHARS", "120")
    monkeypatch.setenv("CHATSVC_CHUNK_OVERLAP_CHARS", "10")
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.md").write_text("\n\n".join(
        f"Paragraph {i} says the rota for team {i} changes on day {i}." for i in range(20)))
    (docs / "rota.pdf").write_bytes(pdf_bytes(["Kestrel rota"], title="Rota PDF"))
    assert main(["index", str(docs)]) == 0
    out = capsys.readouterr()
    assert "created 2" in out.out and "unembedded 0" in out.out
    # tqdm redraws with \r: the last drawing of each file's bar is its final count.
    bars = {line.split(":")[0]: line for line in out.err.replace("\r", "\n").splitlines()
            if line.startswith("indexing ")}
    done, total = map(int, re.search(r"\| (\d+)/(\d+) \[", bars["indexing 1/2 long.md"]).groups())
    assert done == total > 16  # more than one batch of a job
    assert "chunk/s" in bars["indexing 1/2 long.md"]
    assert "| 1/1 [" in bars["indexing 2/2 rota.pdf"]
