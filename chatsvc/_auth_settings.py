"""Start-up checks of the authentication settings: the headers a service key names its
end users with (CHATSVC_USER_HEADER, CHATSVC_USER_NAME_HEADER) and the optional JWT
bearer tokens (CHATSVC_JWT_*)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from chatsvc._errors import SettingsError

if TYPE_CHECKING:
    from chatsvc._settings import Settings

# RFC 9110's token: the characters a header name may have.
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,100}$")
# Headers with a meaning of their own to HTTP, proxies or chatsvc.
_TAKEN = {"authorization", "content-type", "content-length", "host", "cookie",
          "transfer-encoding", "connection"}


def check_auth(settings: Settings) -> None:
    for var, name in (("CHATSVC_USER_HEADER", settings.user_header),
                      ("CHATSVC_USER_NAME_HEADER", settings.user_name_header)):
        if not _HEADER_NAME.match(name):
            raise SettingsError(f"{var}={name!r} is not a header name: use letters, digits "
                                "and dashes, e.g. X-OpenWebUI-User-Id.")
        if name.lower() in _TAKEN:
            raise SettingsError(f"{var}={name!r} is a header HTTP already uses: "
                                "name another, e.g. X-Chatsvc-User.")
    if settings.user_header.lower() == settings.user_name_header.lower():
        raise SettingsError("CHATSVC_USER_HEADER and CHATSVC_USER_NAME_HEADER name the same "
                            "header: the id and the display name need one each.")
    _check_jwt(settings)


def _check_jwt(settings: Settings) -> None:
    if settings.jwt_jwks_url and settings.jwt_secret:
        raise SettingsError("CHATSVC_JWT_JWKS_URL and CHATSVC_JWT_SECRET are both set: keep "
                            "one (a JWKS for RS/ES/EdDSA tokens, a secret for HS256).")
    if not settings.jwt_enabled:
        for var, value in (("CHATSVC_JWT_ISSUER", settings.jwt_issuer),
                           ("CHATSVC_JWT_AUDIENCE", settings.jwt_audience)):
            if value:
                raise SettingsError(f"{var} is set but no key checks the tokens: set "
                                    "CHATSVC_JWT_JWKS_URL (the issuer's JWKS) or "
                                    "CHATSVC_JWT_SECRET (HS256).")
        return
    if settings.jwt_secret is not None and len(settings.jwt_secret.encode()) < 32:
        raise SettingsError("CHATSVC_JWT_SECRET is shorter than 32 bytes, too weak for "
                            "HS256: use a random one, e.g. `openssl rand -hex 32`.")
    if settings.jwt_jwks_url:
        parsed = urlparse(settings.jwt_jwks_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SettingsError(f"CHATSVC_JWT_JWKS_URL={settings.jwt_jwks_url!r} is not an "
                                "http(s) URL: use the issuer's jwks_uri, e.g. "
                                "https://auth.example.com/.well-known/jwks.json.")
        if not settings.jwt_issuer:
            raise SettingsError("CHATSVC_JWT_JWKS_URL needs CHATSVC_JWT_ISSUER, the `iss` "
                                "its tokens carry (e.g. https://auth.example.com).")
