"""The time a question names, resolved against when and where it is asked."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from context.question_dates import window

SHANGHAI = ZoneInfo("Asia/Shanghai")
# Tuesday 18 April 2023, 16:50 in Shanghai (08:50 UTC).
ASKED = datetime(2023, 4, 18, 16, 50, tzinfo=SHANGHAI)


def _local_days(question: str, asked: datetime = ASKED) -> tuple[str, str]:
    """The window's first day and its end, in the asker's zone."""
    found = window(question, asked)
    assert found is not None, question
    zone = asked.tzinfo
    return (found.start.astimezone(zone).date().isoformat(),
            found.end.astimezone(zone).date().isoformat())


@pytest.mark.parametrize(("question", "first", "end"), [
    # The period named, then as long again after it (at least two days; May: 31 more
    # days): what was said about an event often comes after it.
    ("Who did I meet for lunch last Tuesday?", "2023-04-11", "2023-04-14"),
    ("What did I do yesterday?", "2023-04-17", "2023-04-20"),
    ("What did I do last weekend?", "2023-04-15", "2023-04-19"),
    ("What did I read last week?", "2023-04-10", "2023-04-24"),
    ("What happened two weeks ago?", "2023-04-03", "2023-04-17"),
    ("Where was I 3 days ago?", "2023-04-15", "2023-04-18"),
    ("What did I do last May?", "2022-05-01", "2022-07-02"),  # April: May was last year
    ("What did I eat in March?", "2023-03-01", "2023-05-02"),
    ("What did we discuss on 7 July, 2023?", "2023-07-07", "2023-07-10"),
    ("What did I buy in May 2022?", "2022-05-01", "2022-07-02"),
    ("How many times did I go to the beach in 2022?", "2022-01-01", "2024-01-01"),
    ("What did I buy last month?", "2023-03-01", "2023-05-02"),
    ("What did I do three months ago?", "2023-01-01", "2023-03-04"),
    ("我去年去了哪里？", "2022-01-01", "2024-01-01"),
    ("上个月我买了什么？", "2023-03-01", "2023-05-02"),
    ("上周六我见了谁？", "2023-04-15", "2023-04-18"),
    ("我三天前吃了什么？", "2023-04-15", "2023-04-18"),
    ("我昨晚吃了什么？", "2023-04-17", "2023-04-20"),
    ("2022年5月我在哪里？", "2022-05-01", "2022-07-02"),
    ("五月我在忙什么？", "2022-05-01", "2022-07-02"),
    ("3月5日我去了哪儿？", "2023-03-05", "2023-03-08"),
])
def test_dates_resolve_in_the_askers_zone(question, first, end):
    assert _local_days(question) == (first, end)


def test_the_window_is_utc_and_follows_the_askers_day():
    found = window("What did I do yesterday?", ASKED)
    assert found.start == datetime(2023, 4, 16, 16, 0, tzinfo=UTC)  # midnight in Shanghai
    # Just after midnight UTC on the 18th it is still the 17th in Los Angeles.
    la = datetime(2023, 4, 18, 0, 30, tzinfo=UTC).astimezone(ZoneInfo("America/Los_Angeles"))
    assert _local_days("What did I do yesterday?", la)[0] == "2023-04-16"


@pytest.mark.parametrize("question", [
    "When did Caroline go to the LGBTQ support group?",
    "How many days ago did I go rafting?",  # the answer is a count, no period is named
    "This may sound odd, but where did I park?",  # "may" the verb
    "What did I do on February 30, 2023?",  # no such day
    "我上次去哪里了？",
    "",
])
def test_a_question_naming_no_time_has_no_window(question):
    assert window(question, ASKED) is None


def test_dates_beyond_the_calendar_have_no_window():
    assert window("What did I do last year?", datetime(1, 3, 1, tzinfo=UTC)) is None
    assert window("What did I do this year?", datetime(9999, 12, 31, 23, 0, tzinfo=UTC)) is None
