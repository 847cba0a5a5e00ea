"""What the harness writes into its reports about the run itself."""
def test_the_command_line_shows_prompt_settings_but_never_secrets(monkeypatch):
    from evals.cache.__main__ import _settings_in_env

    monkeypatch.setenv("CHATSVC_HISTORY_TOKENS", "8000")
    monkeypatch.setenv("CHATSVC_DATABASE_URL", "postgresql://u:pw@db/chat")
    monkeypatch.setenv("CHATSVC_ADMIN_TOKEN", "s3cret")
    monkeypatch.setenv("LLM_API_KEY", "sk-x")
    shown = _settings_in_env()
    assert "CHATSVC_HISTORY_TOKENS=8000" in shown
    assert not any("pw" in item or "s3cret" in item or "sk-x" in item for item in shown)
