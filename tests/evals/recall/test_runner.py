from evals.recall.client import Found
from evals.recall.locomo import Question
from evals.recall.runner import ranking_row


def test_a_ranking_row_names_the_turns_in_the_order_the_service_ranked_them():
    question = Question("Where did Caroline move?", 4, frozenset({"D2:3"}))
    found = Found([{"message_id": "m2", "score": 0.9, "conversation_id": "c2"},
                   {"message_id": "elsewhere", "score": 0.8, "conversation_id": "c9"},
                   {"message_id": "m1", "score": 0.4, "conversation_id": "c1"}], 0.01, None)
    row = ranking_row("conv-1", question, "hybrid", found, {"m1": "D1:1", "m2": "D2:3"})
    assert row == {"sample": "conv-1", "question": "Where did Caroline move?", "category": 4,
                   "evidence": ["D2:3"], "mode": "hybrid",
                   "ranking": [["D2:3", 0.9, "c2"], ["D1:1", 0.4, "c1"]]}
    assert found.message_ids == ["m2", "elsewhere", "m1"]


def test_questions_are_asked_at_their_date_or_after_the_last_message():
    from evals.recall.longmemeval import Haystack
    from evals.recall.runner import asked_at

    sessions = [({"messages": [{"created_at": "2023-05-08T10:00:00.000000Z"},
                               {"created_at": "2023-05-08T10:00:10.000000Z"}]}, ["D1:1", "D1:2"]),
                ({"messages": [{"created_at": "2023-05-01T09:00:00.000000Z"}]}, ["D2:1"])]
    sample = Question("q", 2, frozenset())  # a LoCoMo sample has no date of its own
    assert asked_at(sample, sessions) == "2023-05-08T10:00:10.000000Z"
    dated = Haystack("q1", "temporal-reasoning", "q?", sessions, frozenset(), frozenset(),
                     "2023-06-01T12:00:00.000000Z")
    assert asked_at(dated, sessions) == "2023-06-01T12:00:00.000000Z"
