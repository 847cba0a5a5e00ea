"""Small pure pieces of the chat: the user's date, usage parsing, history."""

from __future__ import annotations

from datetime import UTC, date, datetime

from chatsvc.chat._prepare import user_today
from chatsvc.chat._turn import history_of
from chatsvc.llm import parse_usage
from context import Message
from store import ChatMessage


def test_the_date_is_the_users_local_date():
    evening_utc = datetime(2026, 11, 21, 20, 30, tzinfo=UTC)
    assert user_today("Asia/Tokyo", evening_utc) == date(2026, 11, 22)
    assert user_today("America/Los_Angeles", evening_utc) == date(2026, 11, 21)
    assert user_today("Not/AZone", evening_utc) == date(2026, 11, 21)


def test_cached_tokens_from_openai_details_kimi_top_level_or_unknown():
    openai_style = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
                    "prompt_tokens_details": {"cached_tokens": 64}}
    assert parse_usage(openai_style).cached_tokens == 64
    kimi_style = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
                  "cached_tokens": 80}
    assert parse_usage(kimi_style).cached_tokens == 80
    silent = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    assert parse_usage(silent).cached_tokens is None
    assert parse_usage({"prompt_tokens": 3, "completion_tokens": 1,
                        "cached_tokens": 0}).cached_tokens == 0
    assert parse_usage(None) is None


def test_history_skips_the_current_message_and_empty_answers():
    def message(i, role, content, status="complete"):
        return ChatMessage(f"m{i}", "c", role, content, status, "2026-11-21T00:00:00Z")

    stored = [message(1, "user", "a"), message(2, "assistant", "", "error"),
              message(3, "user", "b"), message(4, "assistant", "partial", "interrupted"),
              message(5, "user", "now")]
    assert history_of(stored, "m5") == [Message("user", "a"), Message("user", "b"),
                                        Message("assistant", "partial")]
