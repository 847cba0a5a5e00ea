import json

from evals.recall.locomo import Problems, dia_id, load, samples_of

SAMPLE = {
    "sample_id": "conv-1",
    "extra": {"ignored": True},
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I moved to Porto."},
            {
                "speaker": "Ben",
                "dia_id": "D1:2",
                "text": "Nice!",
                "img_url": ["x"],
                "blip_caption": "a photo of a bridge",
            },
            {"speaker": "Ana", "dia_id": "D1:3", "text": "  "},
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:01", "text": "bell\x07 rings"}],
        "session_3": [],
    },
    "qa": [
        {"question": "Where did Ana move?", "answer": "Porto", "evidence": ["D1:1"], "category": 4},
        {"question": "What did Ben share?", "evidence": ["D1:2; D2:1", "D9:9"], "category": 1},
        {
            "question": "Adversarial?",
            "adversarial_answer": "x",
            "evidence": ["D1:1"],
            "category": 5,
        },
        {"question": "No evidence", "answer": "x", "evidence": ["see above"], "category": 2},
        {"question": "Bad category", "answer": "x", "evidence": ["D1:1"], "category": "?"},
    ],
}


def _load(tmp_path, data):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    problems = Problems()
    return load(path, problems), problems


def test_sessions_turns_and_questions_of_a_real_shaped_sample(tmp_path):
    (sample,), problems = _load(tmp_path, [SAMPLE])
    assert (sample.sample_id, sample.speaker_a, sample.speaker_b) == ("conv-1", "Ana", "Ben")
    assert [s.number for s in sample.sessions] == [1, 2]  # the empty session 3 is dropped
    assert [t.dia_id for s in sample.sessions for t in s.turns] == ["D1:1", "D1:2", "D2:1"]
    assert sample.sessions[0].turns[1].text == "Nice! [shared a photo: a photo of a bridge]"
    assert sample.sessions[1].turns[0].text == "bell rings"
    assert sample.sessions[1].date_time == "2:00 pm on 9 May, 2023"
    assert [(q.category, sorted(q.evidence)) for q in sample.questions] == [
        (4, ["D1:1"]),
        (1, ["D1:2", "D2:1"]),
        (5, ["D1:1"]),
    ]
    assert sample.turn_count == 3
    assert problems.counts == {
        "turn without dia id or text (skipped)": 1,
        "several dia ids in one evidence item": 1,
        "evidence id not in the conversation": 1,
        "evidence item naming no dia id": 1,
        "question without usable evidence, text or category (skipped)": 2,
    }
    assert problems.examples["evidence id not in the conversation"] == ["conv-1: D9:9"]
    # what the results file gets (dataclasses.asdict made tuple keys of the counts)
    assert json.loads(json.dumps(problems.as_json()))["counts"] == problems.counts


def test_a_single_sample_object_is_read_as_a_list_of_one(tmp_path):
    samples, _ = _load(tmp_path, SAMPLE)
    assert len(samples) == 1


def test_dia_ids_are_canonical():
    assert dia_id("D01:003") == "D1:3"
    assert dia_id(" D 2 : 4 ") == "D2:4"
    assert dia_id("D2") is None


def test_the_acceptance_conversations_are_skipped_unless_asked_for():
    held = {**SAMPLE, "sample_id": "conv-47"}
    problems = Problems()
    assert [s.sample_id for s in samples_of([SAMPLE, held], problems)] == ["conv-1"]
    assert problems.counts["held-out conversation (skipped; --include-heldout)"] == 1
    assert [s.sample_id for s in samples_of([SAMPLE, held], Problems(), include_heldout=True)
            ] == ["conv-1", "conv-47"]
