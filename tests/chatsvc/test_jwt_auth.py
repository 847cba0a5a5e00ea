"""JWT bearer tokens through the real app, checked against a real JWKS server on
loopback serving keys made here with `cryptography`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from chatsvc import Settings, _jwt
from chatsvc.testing._loopback import LoopbackHTTPServer

ISSUER = "https://auth.example.test/realms/team"
AUDIENCE = "chatsvc"


class JwksServer:
    """Serves `document` at /jwks.json and counts the fetches."""

    def __init__(self) -> None:
        self.document: dict = {"keys": []}
        self.fetches = 0
        self.down = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.fetches += 1
                status, body = (503, b"down") if outer.down else (
                    200, json.dumps(outer.document).encode())
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"

    def publish(self, kid: str, private_key, **extra) -> None:
        public = private_key.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(public, as_dict=True)
        else:
            jwk = jwt.algorithms.ECAlgorithm.to_jwk(public, as_dict=True)
        self.document["keys"].append({**jwk, "kid": kid, "use": "sig", **extra})


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def other_rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def jwks(rsa_key):
    server = JwksServer()
    server.publish("k1", rsa_key, alg="RS256")
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def settings(isolated_env, monkeypatch, jwks) -> Settings:
    monkeypatch.setenv("CHATSVC_JWT_JWKS_URL", jwks.url)
    monkeypatch.setenv("CHATSVC_JWT_ISSUER", ISSUER)
    monkeypatch.setenv("CHATSVC_JWT_AUDIENCE", AUDIENCE)
    return Settings.from_env()


def _claims(**changes) -> dict:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "iat": now, "exp": now + 300,
              "name": "Ada Lovelace"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _signed(key, kid: str = "k1", alg: str = "RS256", **changes) -> dict:
    token = jwt.encode(_claims(**changes), key, algorithm=alg, headers={"kid": kid})
    return {"Authorization": f"Bearer {token}"}


def _at_run(change: dict) -> dict:
    """Claims given as (NOW, seconds) become that many seconds from now."""
    return {name: int(time.time()) + value[1] if isinstance(value, tuple) and value[0] is NOW
            else value for name, value in change.items()}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forged(header: dict, secret: bytes | None) -> dict:
    """A token built by hand: `alg: none` (no signature) or HMAC with `secret`."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(_claims()).encode())}"
    signature = "" if secret is None else _b64(
        hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
    return {"Authorization": f"Bearer {signing_input}.{signature}"}


def _me(client, headers):
    return client.get("/api/me", headers=headers)


def test_a_valid_token_is_its_subject_created_on_first_sight(client, services, rsa_key, jwks):
    first = _me(client, _signed(rsa_key))
    assert first.status_code == 200, first.text
    assert first.json()["name"] == "Ada Lovelace" and not first.json()["is_admin"]
    assert _me(client, _signed(rsa_key)).json() == first.json()
    user = services.stores.users.get(first.json()["id"])
    assert (user.kind, user.external_id) == ("end_user", "user-1")
    assert services.stores.users.get(user.owner_id).name == f"jwt:{ISSUER}"
    assert jwks.fetches == 1  # cached
    services.stores.users.revoke(f"jwt:{ISSUER}")  # every token of the issuer, at once
    assert _me(client, _signed(rsa_key)).status_code == 401


def test_subjects_never_see_each_others_data(client, services, rsa_key):
    ann, ben = _signed(rsa_key, sub="ann"), _signed(rsa_key, sub="ben")
    assert client.post("/api/facts", headers=ann, json={
        "category": "core", "fact": "Owns a kayak"}).status_code == 201
    assert client.get("/api/facts", headers=ben).json()["facts"] == []
    # A service key's end user "ann" is someone else: namespaced by issuer and key.
    _, key = services.stores.users.add("webui", kind="service")
    other = {"Authorization": f"Bearer {key}", "X-Chatsvc-User": "ann"}
    assert client.get("/api/facts", headers=other).json()["facts"] == []
    assert [f["fact"] for f in client.get("/api/facts", headers=ann).json()["facts"]] == [
        "Owns a kayak"]


# Times relative to the test's run (`_at_run`), not to collection: a long suite run
# would age a fixed "not valid yet" into a valid token.
NOW = object()


@pytest.mark.parametrize(("change", "reason"), [
    ({"exp": (NOW, -120)}, "expired"),
    ({"nbf": (NOW, 120)}, "not valid yet"),
    ({"iss": "https://evil.example.test"}, "issuer"),
    ({"aud": "another-app"}, "audience"),
    ({"aud": None}, "aud"),
    ({"exp": None}, "exp"),
    ({"sub": None}, "sub"),
    ({"sub": ""}, "sub"),
])
def test_tokens_with_bad_claims_are_401_and_create_nobody(client, services, rsa_key, change,
                                                          reason):
    before = len(services.stores.users.list())
    response = _me(client, _signed(rsa_key, **_at_run(change)))
    assert response.status_code == 401
    assert reason in response.json()["detail"]
    assert len(services.stores.users.list()) == before


def test_forged_tokens_are_401(client, services, rsa_key, other_rsa_key):
    pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    for headers in (
        _forged({"alg": "none", "typ": "JWT", "kid": "k1"}, None),
        _forged({"alg": "HS256", "typ": "JWT", "kid": "k1"}, pem),  # the public key as secret
        _signed(other_rsa_key),  # someone else's key under our kid
        _signed(rsa_key, kid="k-unknown"),
        _signed(rsa_key, alg="PS256"),  # the key is published for RS256 only
    ):
        response = _me(client, headers)
        assert response.status_code == 401, response.text
        assert response.json()["detail"].startswith("invalid JWT")
    assert services.stores.users.list() == []


def test_an_unknown_kid_refreshes_the_jwks_at_most_so_often(client, monkeypatch, rsa_key,
                                                            jwks):
    monkeypatch.setattr(_jwt, "JWKS_MIN_REFRESH_SECONDS", 1.5)
    assert _me(client, _signed(rsa_key)).status_code == 200
    rotated = ec.generate_private_key(ec.SECP256R1())
    jwks.publish("k2", rotated)  # no `alg`: any ES algorithm of its curve
    time.sleep(1.6)
    assert _me(client, _signed(rotated, kid="k2", alg="ES256")).status_code == 200
    assert jwks.fetches == 2
    for made_up in ("k8", "k9", "k10"):  # within the interval: no fetch each
        assert _me(client, _signed(rsa_key, kid=made_up)).status_code == 401
    assert jwks.fetches == 2
    assert _me(client, _signed(rsa_key, kid="k2", alg="RS256")).status_code == 401  # EC key


def test_a_jwt_cannot_act_for_anyone_else(client, rsa_key):
    headers = {**_signed(rsa_key), "X-Chatsvc-User": "someone"}
    assert _me(client, headers).status_code == 403


def test_plain_tokens_keep_working_beside_jwts(client, alice):
    assert _me(client, alice[1]).json()["name"] == "alice"


def test_an_unreachable_jwks_is_503_until_it_answers(client, monkeypatch, rsa_key, jwks):
    monkeypatch.setattr(_jwt, "JWKS_MIN_REFRESH_SECONDS", 0.0)
    jwks.down = True
    assert _me(client, _signed(rsa_key)).status_code == 503
    jwks.down = False
    assert _me(client, _signed(rsa_key)).status_code == 200


def test_an_hs256_secret_takes_hs256_tokens_only(monkeypatch, isolated_env, local_embedder,
                                                 rsa_key):
    from litestar.testing import TestClient

    from chatsvc import Services, create_app

    secret = "s" * 40
    monkeypatch.setenv("CHATSVC_JWT_SECRET", secret)
    services = Services.open(Settings.from_env(), embedder=local_embedder)
    try:
        with TestClient(create_app(services=services)) as client:
            good = _me(client, _signed(secret, alg="HS256", iss=None, aud=None))
            assert good.status_code == 200, good.text
            assert _me(client, _signed(rsa_key, iss=None, aud=None)).status_code == 401
            assert _me(client, _forged({"alg": "none"}, None)).status_code == 401
            assert _me(client, _signed("t" * 40, alg="HS256", iss=None, aud=None)
                       ).status_code == 401
    finally:
        services.stores.db.close()
