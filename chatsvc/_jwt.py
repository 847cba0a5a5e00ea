"""Optional JWT bearer tokens (CHATSVC_JWT_*), for front ends that sign their users in
with OIDC: a valid token's `sub` is the user (chatsvc._acting hangs them off an
`issuer` account, so two issuers never share a user).

Checked with PyJWT. The algorithm must be one the key source allows: HS256 for
CHATSVC_JWT_SECRET; for a JWKS only asymmetric ones, so a public key is never taken for
an HMAC secret, and never `none`. `exp` is required, `nbf` and `iat` are honoured (with
LEEWAY_SECONDS of clock skew), `iss` and `aud` must match when set. The JWKS is cached:
fetched again when older than JWKS_MAX_AGE_SECONDS, or when a token names a `kid` it
lacks (rotation), at most once per JWKS_MIN_REFRESH_SECONDS so that made-up kids cannot
make chatsvc hammer the issuer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import httpx
import jwt

from chatsvc._settings import Settings

log = logging.getLogger("chatsvc.jwt")

ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
              "ES512", "EdDSA")
LEEWAY_SECONDS = 30
JWKS_MAX_AGE_SECONDS = 3600.0
JWKS_MIN_REFRESH_SECONDS = 30.0
JWKS_TIMEOUT_SECONDS = 5.0
MAX_JWKS_BYTES = 1024 * 1024
MAX_SUBJECT_CHARS = 256


class InvalidJwt(Exception):
    """The token is no valid JWT for this service (answered as 401)."""


class JwksUnavailable(Exception):
    """The JWKS could not be fetched and no copy of it is cached (answered as 503)."""


@dataclass(frozen=True)
class Subject:
    id: str  # `sub`
    name: str | None  # `name` or `preferred_username`, when the token has one


@dataclass(frozen=True)
class _Key:
    key: object  # the public key (cryptography's)
    kty: str
    alg: str | None  # as the JWKS declares it, if it does


# An algorithm's prefix -> the key type it signs with.
_FAMILY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def looks_like_jwt(token: str) -> bool:
    """chatsvc's own tokens have one dot, a JWT (header.payload.signature) two."""
    return token.count(".") == 2


class JwtVerifier:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # The account the tokens' users hang off, one per issuer.
        self.namespace = f"jwt:{settings.jwt_issuer or 'hs256'}"
        self._keys: dict[str | None, _Key] = {}
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()

    async def subject(self, token: str) -> Subject:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidJwt("not a JWT") from None
        alg = header.get("alg")
        key = await self._key(alg, header.get("kid"))
        required = ["exp", "sub"] + [claim for claim, wanted in (
            ("iss", self.settings.jwt_issuer), ("aud", self.settings.jwt_audience)) if wanted]
        try:
            claims = jwt.decode(token, key, algorithms=[alg], issuer=self.settings.jwt_issuer,
                                audience=self.settings.jwt_audience, leeway=LEEWAY_SECONDS,
                                options={"require": required})
        except jwt.PyJWTError as exc:
            raise InvalidJwt(_reason(exc)) from None
        return _subject(claims)

    async def _key(self, alg: object, kid: object) -> object:
        if self.settings.jwt_secret is not None:
            if alg != "HS256":
                raise InvalidJwt(f"alg {alg!r} is not HS256")
            return self.settings.jwt_secret
        if alg not in ASYMMETRIC:
            raise InvalidJwt(f"alg {alg!r} is not accepted: {', '.join(ASYMMETRIC)} only")
        found = await self._jwk(kid if isinstance(kid, str) else None)
        if found.kty != _FAMILY[alg[:2]] or found.alg not in (None, alg):
            raise InvalidJwt(f"key {kid!r} ({found.kty}, {found.alg}) is not for {alg}")
        return found.key

    async def _jwk(self, kid: str | None) -> _Key:
        async with self._lock:
            now = time.monotonic()
            age = None if self._fetched_at is None else now - self._fetched_at
            if age is None or age > JWKS_MAX_AGE_SECONDS or (
                    kid not in self._keys and age >= JWKS_MIN_REFRESH_SECONDS):
                await self._refresh()
        found = self._keys.get(kid)
        if found is None and kid is None and len(self._keys) == 1:
            found = next(iter(self._keys.values()))  # a JWKS of one key, a token without kid
        if found is None:
            raise InvalidJwt(f"no key {kid!r} in the issuer's JWKS")
        return found

    async def _refresh(self) -> None:
        url = self.settings.jwt_jwks_url
        try:
            async with httpx.AsyncClient(timeout=JWKS_TIMEOUT_SECONDS) as client:
                response = await client.get(url)
            response.raise_for_status()
            if len(response.content) > MAX_JWKS_BYTES:
                raise ValueError(f"more than {MAX_JWKS_BYTES} bytes")
            keys = _usable(response.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            self._fetched_at = time.monotonic()  # wait as long before the next try
            if not self._keys:
                raise JwksUnavailable(f"the JWKS at CHATSVC_JWT_JWKS_URL cannot be fetched "
                                      f"({exc})") from None
            log.warning("JWKS refresh from %s failed, keeping the cached keys: %s", url, exc)
            return
        self._keys, self._fetched_at = keys, time.monotonic()


def _usable(document: object) -> dict[str | None, _Key]:
    """The JWKS's public signing keys by kid (others, and keys of unknown types, are
    left out: a symmetric `oct` key in a JWKS would be an HMAC secret anyone can read)."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JWKS: no `keys` list")
    found = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig" or \
                entry.get("kty") not in _FAMILY.values():
            continue
        try:
            key = jwt.PyJWK(entry).key
        except jwt.PyJWTError:
            continue
        found[entry.get("kid")] = _Key(key, entry["kty"], entry.get("alg"))
    if not found:
        raise ValueError("the JWKS has no signing key chatsvc can use")
    return found


def _reason(exc: jwt.PyJWTError) -> str:
    reasons = {jwt.ExpiredSignatureError: "it has expired",
               jwt.ImmatureSignatureError: "it is not valid yet",
               jwt.InvalidIssuerError: "wrong issuer (iss)",
               jwt.InvalidAudienceError: "wrong audience (aud)",
               jwt.InvalidSignatureError: "bad signature",
               jwt.MissingRequiredClaimError: str(exc)}
    return next((text for kind, text in reasons.items() if isinstance(exc, kind)), str(exc))


def _subject(claims: dict) -> Subject:
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub.strip() or len(sub) > MAX_SUBJECT_CHARS or any(
            ord(c) < 32 or ord(c) == 127 for c in sub):
        raise InvalidJwt(f"sub must be an id of 1 to {MAX_SUBJECT_CHARS} printable characters")
    name = next((claims[c] for c in ("name", "preferred_username")
                 if isinstance(claims.get(c), str) and claims[c].strip()), None)
    if name is not None and (len(name) > 200 or any(ord(c) < 32 for c in name)):
        name = None  # a display name only: an odd one is dropped, not refused
    return Subject(sub.strip(), name.strip() if name else None)
