"""The console's files: served without a token, from the package, no third-party origin."""

from __future__ import annotations

import re

from chatsvc.routes.console import STATIC_DIR

IMPORT = re.compile(r"""from\s+'\./([\w-]+\.js)'""")
# src=/href= to another origin, CSS url(//...), or a module imported from a URL.
REMOTE = re.compile(
    r"""(?:src|href)=["'](?:https?:)?//|url\(\s*["']?(?:https?:)?//|from\s+["']https?:"""
)


def test_page_is_served_without_a_token(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"  # one charset
    assert "content-disposition" not in response.headers  # a page, not a download
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert '<script type="module" src="/static/js/main.js">' in response.text


def test_static_files_are_served_with_their_types(client):
    for path, kind in [("/static/js/main.js", "javascript"), ("/static/console.css", "text/css"),
                       ("/static/favicon.svg", "image/svg+xml")]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert kind in response.headers["content-type"], path
    assert client.get("/static/js/nope.js").status_code == 404
    assert client.get("/static/../_app.py").status_code == 404
    assert client.get("/static/a%00b.css").status_code == 404  # was a 500 (found by fuzzing)


def test_the_api_still_needs_a_token(client):
    assert client.get("/api/me").status_code == 401


def test_every_module_import_resolves_to_a_shipped_file():
    scripts = sorted((STATIC_DIR / "js").glob("*.js"))
    assert {p.name for p in scripts} >= {"main.js", "api.js", "sse.js", "chat.js", "facts.js"}
    for script in scripts:
        for name in IMPORT.findall(script.read_text()):
            assert (STATIC_DIR / "js" / name).is_file(), f"{script.name} imports missing {name}"


def test_nothing_is_loaded_from_another_origin():
    files = [p for p in STATIC_DIR.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        assert not REMOTE.search(path.read_text()), path
