from pathlib import Path

import pytest

from chatsvc import Settings, SettingsError


def test_defaults_follow_the_contract():
    settings = Settings.from_env({})
    assert settings.data_dir == Path("./data")
    assert settings.embeddings == "ollama"
    assert settings.ollama_url == "http://localhost:11434"
    assert settings.embed_model == "nomic-embed-text:v1.5"
    assert settings.embed_dim == 768
    assert settings.embed_document_prefix == "search_document: "
    assert settings.embed_query_prefix == "search_query: "
    assert settings.llm_base_url.startswith("https://api.moonshot")
    assert settings.context_strategy == "in_history"  # the cheapest layout (docs/evals.md)


def test_local_embeddings_use_e5_prefixes_and_dimension():
    settings = Settings.from_env({"CHATSVC_EMBEDDINGS": "local"})
    assert (settings.embed_dim, settings.embed_query_prefix) == (384, "query: ")


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"CHATSVC_EMBEDDINGS": "bogus"}, ["CHATSVC_EMBEDDINGS", "ollama, openai, local"]),
        ({"CHATSVC_PORT": "http"}, ["CHATSVC_PORT", "whole number"]),
        ({"CHATSVC_PORT": "70000"}, ["CHATSVC_PORT", "1-65535"]),
        ({"OLLAMA_URL": "localhost:11434"}, ["OLLAMA_URL", "http://localhost:11434"]),
        ({"LLM_BASE_URL": "ftp://x"}, ["LLM_BASE_URL"]),
        ({"CHATSVC_EMBEDDINGS": "openai"}, ["CHATSVC_EMBED_URL"]),
        ({"CHATSVC_EMBED_MODEL": "my-model"}, ["CHATSVC_EMBED_DIM"]),
        ({"CHATSVC_EMBED_DIM": "-3"}, ["CHATSVC_EMBED_DIM", "above 0"]),
        ({"CHATSVC_LOG_LEVEL": "loud"}, ["CHATSVC_LOG_LEVEL", "DEBUG"]),
        ({"CHATSVC_METRICS_TOKEN": "short"}, ["CHATSVC_METRICS_TOKEN", "openssl rand"]),
        ({"CHATSVC_V1_CONVERSATION_HEADER": "Chat Id"},
         ["CHATSVC_V1_CONVERSATION_HEADER", "X-OpenWebUI-Chat-Id"]),
        ({"CHATSVC_USER_HEADER": "X User"}, ["CHATSVC_USER_HEADER", "X-OpenWebUI-User-Id"]),
        ({"CHATSVC_USER_HEADER": "authorization"}, ["CHATSVC_USER_HEADER", "HTTP already"]),
        ({"CHATSVC_USER_NAME_HEADER": "x-chatsvc-user"}, ["CHATSVC_USER_NAME_HEADER", "same"]),
        ({"CHATSVC_AUTO_USERS": "maybe"}, ["CHATSVC_AUTO_USERS", "true"]),
        ({"CHATSVC_JWT_ISSUER": "https://id.example"}, ["CHATSVC_JWT_JWKS_URL", "SECRET"]),
        ({"CHATSVC_JWT_AUDIENCE": "app"}, ["CHATSVC_JWT_AUDIENCE", "no key"]),
        ({"CHATSVC_JWT_JWKS_URL": "https://id.example/jwks", "CHATSVC_JWT_SECRET": "s" * 40},
         ["both", "HS256"]),
        ({"CHATSVC_JWT_JWKS_URL": "https://id.example/jwks"}, ["CHATSVC_JWT_ISSUER"]),
        ({"CHATSVC_JWT_JWKS_URL": "id.example/jwks", "CHATSVC_JWT_ISSUER": "x"},
         ["CHATSVC_JWT_JWKS_URL", "http(s)"]),
        ({"CHATSVC_JWT_SECRET": "short"}, ["CHATSVC_JWT_SECRET", "openssl rand"]),
    ],
)
def test_invalid_values_stop_start_up_with_a_fix(env, names):
    with pytest.raises(SettingsError) as error:
        Settings.from_env(env)
    for name in names:
        assert name in str(error.value)


def test_unknown_model_with_explicit_dimension_is_accepted():
    settings = Settings.from_env({"CHATSVC_EMBED_MODEL": "my-model", "CHATSVC_EMBED_DIM": "512"})
    assert (settings.embed_model, settings.embed_dim) == ("my-model", 512)


def test_serve_refuses_bad_settings(monkeypatch, capsys):
    from chatsvc.cli import main

    monkeypatch.setenv("CHATSVC_EMBEDDINGS", "nope")
    assert main(["serve"]) == 2
    assert "CHATSVC_EMBEDDINGS" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "ok"), [
    ({"LLM_CONTEXT_TOKENS": "8192"}, True),
    ({"LLM_CONTEXT_TOKENS": "2047"}, False),  # no room beside the 1024-token answer reserve
    ({"LLM_CONTEXT_TOKENS": "8192", "LLM_MAX_TOKENS": "4097"}, False),
])
def test_the_context_window_must_leave_room_for_a_prompt(env, ok):
    if ok:
        assert Settings.from_env(env).llm_context_tokens == 8192
        return
    with pytest.raises(SettingsError, match="LLM_CONTEXT_TOKENS"):
        Settings.from_env(env)


@pytest.mark.parametrize("level", ["WARNING", "DEBUG"])
def test_the_log_level_reaches_the_root_logger_past_litestars_default(settings, level):
    import logging

    from chatsvc import create_app

    before = logging.getLogger().level
    try:
        create_app(settings.with_overrides(log_level=level))
        assert logging.getLogger().level == logging.getLevelName(level)
        # httpx logs every request at INFO: silent at WARNING
        assert logging.getLogger("httpx").isEnabledFor(logging.INFO) == (level == "DEBUG")
    finally:
        logging.getLogger().setLevel(before)
