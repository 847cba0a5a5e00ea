import pytest

from store import UserExists
from store.users import hash_secret


def test_token_authenticates_its_user_and_is_stored_hashed(users):
    user, token = users.add("alice", admin=True)
    assert users.authenticate(token) == user
    _, _, secret = token.partition(".")
    row = users.db.execute("SELECT * FROM tokens").fetchone()
    assert row["secret_hash"] == hash_secret(secret)
    for table in ("users", "tokens"):
        for stored in users.db.execute(f"SELECT * FROM {table}").fetchall():
            assert secret not in tuple(str(v) for v in dict(stored).values())


@pytest.mark.parametrize("mangle", [lambda t: t + "x", lambda t: t.split(".")[0],
                                    lambda t: "." + t.split(".")[1], lambda t: "", lambda t: "."])
def test_wrong_tokens_are_rejected(users, mangle):
    _, token = users.add("alice")
    assert users.authenticate(mangle(token)) is None


def test_revoked_tokens_stop_working(users):
    _, token = users.add("alice")
    users.revoke("alice")
    assert users.authenticate(token) is None


def test_names_are_unique(users):
    users.add("alice")
    with pytest.raises(UserExists):
        users.add("alice")


def test_a_user_is_found_by_name(users):
    from store import NotFound

    alice, _ = users.add("alice")
    users.add("bob")
    assert users.named("alice") == alice
    with pytest.raises(NotFound):
        users.named("carol")


def test_a_user_holds_many_tokens_each_revoked_on_its_own(users):
    alice, first = users.add("alice")
    second_token, second = users.issue(alice.id)
    assert users.authenticate(first) == users.authenticate(second) == alice
    assert users.revoke_token(second_token.id).revoked_at is not None
    assert users.authenticate(second) is None
    assert users.authenticate(first) == alice
    listed, total = users.tokens(user_id=alice.id)
    assert [t.id for t in listed] == [first.split(".")[0], second_token.id] and total == 2


def test_revoking_an_unknown_token_is_not_found(users):
    from store import NotFound

    with pytest.raises(NotFound):
        users.revoke_token("nope")


def test_a_service_key_resolves_the_end_user_it_names(users):
    webui, key = users.add("webui", kind="service")
    assert users.resolve(key, "u-1") == users.resolve(key) == type(users.resolve(key))(
        webui, None)
    carol = users.end_user(webui.id, "u-1", "Carol")
    assert (carol.kind, carol.owner_id, carol.external_id) == ("end_user", webui.id, "u-1")
    found = users.resolve(key, "u-1")
    assert (found.account, found.end_user) == (webui, carol)
    assert users.end_user(webui.id, "u-1", "Carol again") == carol  # found, not made twice


def test_end_users_are_namespaced_by_their_account(users):
    webui, webui_key = users.add("webui", kind="service")
    chat, chat_key = users.add("librechat", kind="service")
    one, other = users.end_user(webui.id, "42", "Sam"), users.end_user(chat.id, "42", "Sam")
    assert one.id != other.id
    assert users.resolve(webui_key, "42").end_user == one
    assert users.resolve(chat_key, "42").end_user == other


def test_end_user_names_are_display_names_not_account_names(users):
    from store import NotFound

    webui, _ = users.add("webui", kind="service")
    users.end_user(webui.id, "1", "alice")
    users.end_user(webui.id, "2", "alice")
    with pytest.raises(NotFound):
        users.named("alice")  # an end user is no account
    assert users.add("alice")[0].kind == "user"


def test_end_users_and_issuers_get_no_tokens(users):
    from store import StoreError

    webui, _ = users.add("webui", kind="service")
    carol = users.end_user(webui.id, "1", "Carol")
    with pytest.raises(StoreError):
        users.issue(carol.id)
    with pytest.raises(StoreError):
        users.add("x", kind="end_user")


def test_a_revoked_account_revokes_its_service_key(users):
    webui, key = users.add("webui", kind="service")
    users.end_user(webui.id, "1", "Carol")
    users.revoke("webui")
    assert users.resolve(key, "1") is None


def test_an_issuer_account_is_made_once_and_never_taken_from_another_kind(users):
    first = users.issuer("jwt:https://id.example")
    assert first.kind == "issuer" and users.issuer("jwt:https://id.example") == first
    users.add("jwt:taken")
    with pytest.raises(UserExists):
        users.issuer("jwt:taken")
