from chatsvc.cli import main


def test_users_add_prints_a_working_token_on_the_last_line(capsys, services):
    assert main(["users", "add", "carol", "--admin"]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    user = services.stores.users.authenticate(token)
    assert user.name == "carol" and user.is_admin


def test_users_list_and_revoke(capsys):
    main(["users", "add", "dave"])
    capsys.readouterr()
    assert main(["users", "list"]) == 0
    assert "dave\tuser\tactive" in capsys.readouterr().out
    assert main(["users", "revoke", "dave"]) == 0
    assert main(["users", "revoke", "dave"]) == 1
    main(["users", "list"])
    assert "revoked" in capsys.readouterr().out


def test_doctor_names_the_failing_dependency_and_the_fix(capsys):
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "ok   database" in out
    assert "FAIL llm" in out and "fix: set LLM_BASE_URL" in out
    assert "ok   embeddings_waiting nothing waits" in out


def test_users_add_checks_the_time_zone_as_the_admin_api_does(capsys, services):
    assert main(["users", "add", "erin", "--timezone", "Mars/Olympus"]) == 1
    assert "timezone: 'Mars/Olympus' is not an IANA zone name" in capsys.readouterr().err
    assert [u.name for u in services.stores.users.list()] == []


def test_users_token_adds_a_token_beside_the_first(capsys, services):
    main(["users", "add", "fay"])
    first = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["users", "token", "fay"]) == 0
    second = capsys.readouterr().out.strip().splitlines()[-1]
    assert second != first
    users = services.stores.users
    assert users.authenticate(first).name == users.authenticate(second).name == "fay"
    assert main(["users", "token", "nobody"]) == 1
    main(["users", "add", "gil"])
    assert main(["users", "revoke", "gil", "--token", first.split(".")[0]]) == 1  # fay's
    assert main(["users", "revoke", "fay", "--token", first.split(".")[0]]) == 0
    assert users.authenticate(first) is None
    assert users.authenticate(second).name == "fay"
