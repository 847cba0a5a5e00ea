from chatsvc.cli import main


def test_keys_add_prints_a_working_service_key_on_the_last_line(capsys, services):
    assert main(["keys", "add", "openwebui"]) == 0
    out = capsys.readouterr().out
    assert "X-Chatsvc-User" in out
    key = out.strip().splitlines()[-1]
    account = services.stores.users.authenticate(key)
    assert (account.name, account.kind) == ("openwebui", "service")


def test_keys_list_and_revoke(capsys, services):
    main(["keys", "add", "librechat"])
    key = capsys.readouterr().out.strip().splitlines()[-1]
    key_id = key.split(".")[0]
    main(["users", "add", "dave"])  # a person's token is no service key
    token_id = capsys.readouterr().out.strip().splitlines()[-1].split(".")[0]
    assert main(["keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert f"{key_id}\tlibrechat\tactive" in listed and token_id not in listed
    assert main(["keys", "revoke", token_id]) == 1
    assert main(["keys", "revoke", key_id]) == 0
    assert services.stores.users.authenticate(key) is None
    main(["keys", "list"])
    assert f"{key_id}\tlibrechat\trevoked" in capsys.readouterr().out
