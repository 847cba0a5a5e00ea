"""chatsvc users export | users delete | backup, on the service's own database."""

import asyncio
import json
import sqlite3

import pytest

from chatsvc.cli import main


@pytest.fixture
def carol(services, local_embedder):
    user, _ = services.stores.users.add("carol")
    text = "Carol lives in Oslo"
    services.stores.facts.create(user.id, category="core", fact=text,
                                 embedding=asyncio.run(local_embedder.embed_documents([text]))[0])
    return user


def test_users_export_writes_the_users_document(capsys, tmp_path, carol):
    assert main(["users", "export", "carol"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["user"]["name"] == "carol"
    assert [f["fact"] for f in document["facts"]] == ["Carol lives in Oslo"]
    target = tmp_path / "carol.json"
    assert main(["users", "export", "carol", "-o", str(target)]) == 0
    assert json.loads(target.read_text())["facts"] == document["facts"]
    assert main(["users", "export", "carol", "-o", str(target)]) == 1  # never overwritten
    assert "exists already" in capsys.readouterr().err
    assert main(["users", "export", "nobody"]) == 1


def test_users_delete_asks_for_the_name_unless_yes(capsys, monkeypatch, services, carol):
    monkeypatch.setattr("builtins.input", lambda prompt: "carl")
    assert main(["users", "delete", "carol"]) == 1
    assert "nothing deleted" in capsys.readouterr().err
    assert services.stores.facts.vector_count(carol.id) == 1
    monkeypatch.setattr("builtins.input", lambda prompt: "carol")
    assert main(["users", "delete", "carol"]) == 0
    assert services.stores.facts.vector_count(carol.id) == 0
    assert [u.name for u in services.stores.users.list()] == []
    assert main(["users", "delete", "carol", "--yes"]) == 1


def test_backup_copies_the_database_and_never_overwrites(capsys, tmp_path, carol):
    target = tmp_path / "backup.sqlite3"
    assert main(["backup", str(target)]) == 0
    with sqlite3.connect(target) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("SELECT name FROM users").fetchall() == [("carol",)]
        assert copy.execute("SELECT fact FROM facts").fetchall() == [("Carol lives in Oslo",)]
    assert main(["backup", str(target)]) == 1
    assert "exists already" in capsys.readouterr().err


def test_users_delete_deletes_their_image_files(services, carol):
    from chatsvc.images import Image

    png = Image("data:image/png;base64,iVBORw0KGgo=", mime="image/png",
                data=b"\x89PNG\r\n\x1a\n")
    services.images.save_files(carol.id, [png])
    services.stores.chats.start_turn(carol.id, "look", images=[png.stored()])
    folder = services.images.files.path(carol.id, png.sha256, "image/png").parent
    assert folder.is_dir()
    assert main(["users", "delete", "carol", "--yes"]) == 0
    assert not folder.exists()
