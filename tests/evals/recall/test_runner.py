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
