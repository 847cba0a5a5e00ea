"""The configuration reference (docs/configuration.md, linked from the README) names
every setting the service reads."""

from pathlib import Path

from chatsvc._settings import _ENV_VARS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "docs" / "configuration.md").read_text("utf-8")


def test_every_environment_variable_is_documented():
    missing = []
    for var, _ in _ENV_VARS.values():
        stem = var.rsplit("_MAX_", 1)[-1] if "_MAX_" in var else None
        if f"`{var}`" not in README and not (stem and f"`_MAX_{stem}`" in README):
            missing.append(var)
    assert not missing, f"docs/configuration.md lacks {missing}"
