"""The repository stands alone: no documentation link leaves it, and docs/api.md lists
every route the app serves (and none it does not)."""

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

from chatsvc import Settings, create_app

ROOT = Path(__file__).resolve().parent.parent
API_MD = ROOT / "docs" / "api.md"


def documents() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found += sorted((ROOT / "evals").rglob("README.md"))
    found += [ROOT / "evals" / "BENCHMARKS.md", ROOT / "evals" / "EXPERIMENTS.md"]
    return [path for path in found if path.is_file()]


# -- parsing ----------------------------------------------------------------------------

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1[`~]*[ \t]*$", re.M | re.S)
# A code span never crosses a blank line (the end of a paragraph).
CODE_SPAN = re.compile(r"(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", re.S)
# [text](dest "title") and ![alt](dest): text may hold one level of brackets.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
                    r"\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*)>")
BARE_URL = re.compile(r"(?<![\w/<(\"'])((?:https?|ftp)://[^\s<>)\]]+|www\.[a-z0-9-]+\.[^\s<>)\]]+)",
                      re.I)
HTML_ATTR = re.compile(r"<[a-zA-Z][^>]*?\s(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text: str) -> str:
    """`text` without fenced code blocks and code spans (line breaks kept)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def links(text: str) -> list[str]:
    """Every link and image target in Markdown `text`, code excluded."""
    body = prose(text)
    found = [m.group(1) for pattern in (INLINE, REFERENCE, AUTOLINK, HTML_ATTR)
             for m in pattern.finditer(body)]
    found += [m.group(1) for m in BARE_URL.finditer(body)]  # GFM autolinks these
    return [target[1:-1] if target.startswith("<") else target for target in found]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links -> their text
    text = re.sub(r"[`*_~]|<[^>]+>", "", text).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    text = FENCE.sub("", path.read_text("utf-8"))  # headings keep their code spans
    for match in re.finditer(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", text, re.M):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def problem(source: Path, target: str) -> str | None:
    """Why `target` (a link in `source`) leaves the repository or is broken, else None."""
    if not target:
        return "empty link"
    if target.startswith("//") or SCHEME.match(target) or target.lower().startswith("www."):
        return "leaves the repository"
    path_part, _, anchor = target.partition("#")
    path_part = unquote(path_part.split("?", 1)[0])
    if path_part:
        base = ROOT if path_part.startswith("/") else source.parent
        resolved = (base / path_part.lstrip("/")).resolve()
    else:
        resolved = source
    if not resolved.is_relative_to(ROOT):
        return "resolves outside the repository"
    if not resolved.exists():
        return "no such file in the repository"
    if anchor and resolved.suffix == ".md" and unquote(anchor).lower() not in anchors(resolved):
        return f"no heading for #{anchor} in {resolved.relative_to(ROOT)}"
    return None


# -- the parser itself --------------------------------------------------------------------


def test_the_link_parser_finds_every_kind_of_link():
    text = (
        "[a](docs/x.md) ![img](pic.png \"t\") [b](<with space.md>) <https://ex.org/a>\n"
        "see https://ex.org/b and www.ex.org/c\n"
        "[ref]: ../outside.md\n"
        '<a href="//cdn.ex.org/x.js">x</a>\n'
        "`[not](a-link.md)` and `https://in.code/span`\n"
        "```\n[not](either.md) https://in.fence\n```\n"
    )
    assert links(text) == ["docs/x.md", "pic.png", "with space.md", "../outside.md",
                           "https://ex.org/a", "//cdn.ex.org/x.js", "https://ex.org/b",
                           "www.ex.org/c"]


def test_outside_targets_are_problems():
    readme = ROOT / "README.md"
    assert problem(readme, "https://ollama.com") == "leaves the repository"
    assert problem(readme, "//ex.org/x") == "leaves the repository"
    assert problem(readme, "mailto:a@b.c") == "leaves the repository"
    assert problem(readme, "../shared/API.md") == "resolves outside the repository"
    assert problem(readme, "docs/nope.md") == "no such file in the repository"
    assert problem(readme, "docs/api.md#no-such-heading").startswith("no heading")
    assert problem(readme, "docs/api.md#conventions") is None
    assert problem(readme, "#the-two-commands") is None


def test_github_slugs():
    assert slug("Chat: cache-stable context, RAG splice, streaming, fallback") == \
        "chat-cache-stable-context-rag-splice-streaming-fallback"
    assert slug("`GET /health`") == "get-health"
    assert slug("Non-streaming (`stream: false`)") == "non-streaming-stream-false"


# -- the documents ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_leaves_the_repository(path):
    text = path.read_text("utf-8")
    bad = [f"{target}: {why}" for target in links(text)
           if (why := problem(path, target)) is not None]
    assert not bad, f"{path.relative_to(ROOT)} has links that leave the repo or are broken: {bad}"
    assert "../shared" not in text, f"{path.relative_to(ROOT)} refers to ../shared"


def test_readme_links_the_api_reference_and_the_changelog():
    targets = links((ROOT / "README.md").read_text("utf-8"))
    assert "docs/api.md" in targets
    assert "CHANGELOG.md" in targets


# -- routes ------------------------------------------------------------------------------------

ROUTE_IN_DOC = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE|HEAD)\s+(/[^\s`'\"|,;)?]*)")


def normalized(path: str) -> str:
    """A path with every parameter as `{}` (`{fact_id:str}` and `{id}` are the same)."""
    path = re.sub(r"\{[^}]*\}", "{}", path)
    return path.rstrip("/.:") or "/"


def served_routes() -> set[tuple[str, str]]:
    app = create_app(Settings.from_env())  # no services opened: the lifespan never runs
    return {(method, normalized(route.path))
            for route in app.routes for method in route.methods if method != "OPTIONS"}


def documented_routes() -> set[tuple[str, str]]:
    return {(m.group(1), normalized(m.group(2)))
            for m in ROUTE_IN_DOC.finditer(API_MD.read_text("utf-8"))}


def test_every_served_route_is_in_the_api_reference():
    missing = sorted(served_routes() - documented_routes())
    assert not missing, f"docs/api.md does not document {missing}"


def test_the_api_reference_names_no_route_the_app_does_not_serve():
    unknown = sorted(documented_routes() - served_routes())
    assert not unknown, f"docs/api.md names routes the app does not serve: {unknown}"
