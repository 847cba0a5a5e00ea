import gzip
import json

from evals.recall import report
from evals.recall.locomo import Problems
from evals.recall.longmemeval import (
    heldout_ids,
    is_longmemeval,
    parse_date,
    read_json,
    select,
    session_of,
)
from evals.recall.metrics import by_type, session_score


def _question(qid: str, kind: str, *, answers=("s2",)) -> dict:
    return {
        "question_id": qid, "question_type": kind, "question": f"What about {qid}?",
        "question_date": "2023/05/30 (Tue) 22:40",
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "not a date", "2023/05/22 (Mon) 09:05"],
        "haystack_session_ids": ["s1", "s2", "s3"],
        "haystack_sessions": [
            [{"role": "user", "content": "I moved to Porto."},
             {"role": "assistant", "content": "Nice!\x07 Porto is lovely."}],
            [{"role": "user", "content": "My cat is called Miso.", "has_answer": True},
             {"role": "system", "content": "ignored"}, {"role": "assistant", "content": "  "}],
            [{"role": "assistant", "content": "Here are some tips.", "has_answer": False}],
        ],
        "answer_session_ids": list(answers),
    }


def test_a_question_becomes_its_sessions_as_dated_conversations_with_turn_ids():
    problems = Problems()
    [haystack] = select([_question("q1", "single-session-user")], problems, heldout=frozenset())
    assert [ids for _, ids in haystack.sessions] == [["s1#0", "s1#1"], ["s2#0"], ["s3#0"]]
    first, second, _ = (conversation for conversation, _ in haystack.sessions)
    assert first == {"title": "s1", "messages": [
        {"role": "user", "content": "I moved to Porto.", "created_at": "2023-05-20T02:21:00Z"},
        {"role": "assistant", "content": "Nice! Porto is lovely.",
         "created_at": "2023-05-20T02:21:10Z"}]}
    # An unreadable date: an hour after the previous session's last turn.
    assert second["messages"][0]["created_at"] == "2023-05-20T03:21:20Z"
    assert haystack.evidence == {"s2#0"} and haystack.answer_sessions == {"s2"}
    assert haystack.turn_count == 4 and session_of("s2#0") == "s2"
    assert haystack.asked_at == "2023-05-30T22:40:00Z"  # question_date, as UTC
    assert problems.counts == {
        "session date not readable (placed after the previous one)": 1,
        "turn without text or role (skipped)": 2}


def test_held_out_questions_are_skipped_unless_asked_for_and_small_runs_cover_each_type():
    raw = [_question("a1", "multi-session"), _question("a2", "multi-session"),
           _question("b1", "temporal-reasoning"), _question("held", "temporal-reasoning"),
           _question("abs", "multi-session", answers=())]
    problems = Problems()
    found = select(raw, problems, heldout=frozenset({"held"}))
    assert [h.question_id for h in found] == ["a1", "b1", "a2"]  # in turn from each type
    assert problems.counts["held-out question (skipped; --include-heldout)"] == 1
    assert problems.counts["question without answer sessions or haystack (skipped)"] == 1
    assert [h.question_id for h in select(raw, Problems(), heldout=frozenset({"held"}),
                                          questions=2)] == ["a1", "b1"]
    assert [h.question_id for h in select(raw, Problems(), heldout=frozenset({"held"}),
                                          types=["temporal-reasoning"],
                                          include_heldout=True)] == ["b1", "held"]


def test_the_acceptance_ids_are_bundled_and_skipped_by_default():
    ids = heldout_ids()
    assert len(ids) == 60 and "gpt4_59149c77" in ids
    assert select([_question("gpt4_59149c77", "multi-session")], Problems()) == []


def test_dates_and_files_in_the_released_form(tmp_path):
    assert parse_date("2023/05/20 (Sat) 02:21").isoformat() == "2023-05-20T02:21:00+00:00"
    assert parse_date("2023/02/30 (Thu) 02:21") is None and parse_date("May 20") is None
    path = tmp_path / "longmemeval_s_dev.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump([_question("q1", "multi-session")], handle)
    assert is_longmemeval(read_json(path))
    assert not is_longmemeval([{"conversation": {}, "qa": []}])


def test_sessions_are_ranked_by_their_best_turn_and_scored_at_5_and_10():
    ranking = ["s9#0", "s9#1", "s4#2", "s1#0"] + [f"x{n}#0" for n in range(10)] + ["s2#0"]
    sessions = [session_of(t) for t in ranking]
    scores = session_score(ranking, sessions, frozenset({"s1", "s2"}), frozenset({"s1#0", "s2#0"}))
    assert scores == {"session_any@5": 1.0, "session_any@10": 1.0, "session_all@10": 0.0,
                      "turn@10": 0.5}
    missed = session_score(ranking, sessions, frozenset({"s2"}), frozenset())
    assert missed == {"session_any@5": 0.0, "session_any@10": 0.0, "session_all@10": 0.0}
    means = by_type([("multi-session", scores), ("multi-session", missed)])
    assert means["all"] == {"questions": 2, "session_any@5": 0.5, "session_any@10": 0.5,
                            "session_all@10": 0.0, "turn@10": 0.5}


def test_a_haystack_run_is_reported_per_type_with_its_indexing_speed():
    scores = {"questions": 1, "session_any@5": 1.0, "session_any@10": 1.0,
              "session_all@10": 1.0}
    result = {
        "meta": {"format": "longmemeval", "data": "dev.json.gz", "machine": "test box",
                 "command": "python -m evals.recall", "samples": 1, "turns": 4,
                 "questions": {"multi-session": 1}, "question_ids": ["q1"], "seconds": 3.0},
        "variants": {"context": {
            "import": {"messages": 4, "requests": 1, "import_s": 0.1,
                       "import_and_index_s": 2.0, "messages_per_s": 2.0},
            "modes": {"hybrid": {"by_type": {"multi-session": scores, "all": scores},
                                 "latency_ms": {"n": 1, "p50": 9.0, "p95": 9.0, "max": 9.0},
                                 "degraded": {}}},
            "server_crashes": []}},
        "problems": {"counts": {}, "examples": {}},
    }
    text = report.haystack_markdown(result)
    assert "| context | hybrid | **all** | 1 | 1.000 | 1.000 | 1.000 | - | 9.0 / 9.0 |" in text
    assert "| context | 4 | 1 | 0.1 | 2.0 | 2.0 | 0 |" in text


def test_a_quick_run_keeps_the_answer_sessions_and_the_first_others():
    [haystack] = select([_question("q1", "multi-session", answers=("s3",))], Problems(),
                        heldout=frozenset(), others=1)
    assert [c["title"] for c, _ in haystack.sessions] == ["s1", "s3"]
