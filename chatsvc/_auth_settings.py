"""Start-up checks of the authentication settings: the headers a service key names its
end users with (CHATSVC_USER_HEADER, CHATSVC_USER_NAME_HEADER)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

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
