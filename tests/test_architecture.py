"""The seams docs/architecture.md promises, checked on the source tree.

* A module imports private modules (`_name`) only of its own package or an ancestor's:
  anything else goes through the other package's public `__init__` or public modules.
* SQLite and PostgreSQL are sibling backends: no PostgreSQL class derives from a SQLite
  one, and the PostgreSQL side binds psycopg's own placeholders (no regex rewriting).
* One place constructs the OpenAI client for chat completions.
* Modules stay small.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("chatsvc", "context", "store", "prompts", "evals")
MAX_MODULE_LINES = 400


def _modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append((".".join(parts), path))
    return found


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imported(tree: ast.AST, package: str) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def _private_owner(name: str) -> str | None:
    """The package of ours whose private module `name` reaches into, if it does (a
    third-party `_private` import is that project's business)."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_module_imports_another_packages_private_module():
    offences = []
    for module, path in _modules():
        package = _package_of(module, path)
        for name in _imported(ast.parse(path.read_text("utf-8")), package):
            owner = _private_owner(name)
            if owner is None or package == owner or package.startswith(owner + "."):
                continue
            offences.append(f"{module} imports {name}")
    assert offences == []


def _classes(directory: Path) -> dict[str, list[str]]:
    """class name -> names of its bases, for every class defined under `directory`."""
    found = {}
    for path in directory.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name] = [ast.unparse(base) for base in node.bases]
    return found


def test_postgresql_classes_do_not_derive_from_sqlite_classes():
    sqlite_classes = set(_classes(ROOT / "store" / "sqlite"))
    assert sqlite_classes, "the SQLite backend lives in store/sqlite"
    derived = {
        name: bases for name, bases in _classes(ROOT / "store" / "pg").items()
        if any(base.split(".")[-1] in sqlite_classes for base in bases)
    }
    assert derived == {}


def test_postgresql_backend_does_not_rewrite_sql_with_regexes():
    for path in (ROOT / "store" / "pg").rglob("*.py"):
        assert "re" not in _imported(ast.parse(path.read_text("utf-8")), "store.pg"), path


def test_one_place_constructs_the_chat_completions_client():
    constructions = [
        path.relative_to(ROOT).as_posix()
        for _, path in _modules()
        if path.parts[len(ROOT.parts)] == "chatsvc" and "embeddings" not in path.parts
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("AsyncOpenAI")
    ]
    assert len(constructions) == 1, constructions


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_stay_small(package):
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text("utf-8").splitlines())
        for module, path in _modules() if module.split(".")[0] == package
    }
    assert {path: n for path, n in sizes.items() if n >= MAX_MODULE_LINES} == {}
