"""The extraction request's messages are read back from its prompt, in both versions of
the prompt (labelled `m3 user [date]: ` lines, and plain `user: ` lines)."""

from evals.extraction.answers import CASES, echo_every_message, statements
from evals.extraction.shown import shown_messages

LABELLED = """Rules: quote the user's own words.
Known facts:
f1 [core] Lives in Lyon

Conversation:
m1 user [2023-05-08]: I work as a nurse. Do you?
m2 assistant [2023-05-08]: No: I am a model.
It says so on two lines.
m3 user: If I were a pilot, would I sleep more?
"""

PLAIN = """Conversation:
user: My sister Sam plays jazz.
assistant: Lovely!
"""


def test_labelled_lines_keep_their_labels_and_run_to_the_next_message():
    shown = shown_messages(LABELLED)
    assert [(m.label, m.role) for m in shown] == [("m1", "user"), ("m2", "assistant"),
                                                 ("m3", "user")]
    assert shown[1].text == "No: I am a model.\nIt says so on two lines."
    assert shown[0].sentences() == ["I work as a nurse.", "Do you?"]


def test_plain_lines_are_numbered_in_order():
    shown = shown_messages(PLAIN)
    assert [(m.label, m.role, m.text) for m in shown] == [
        ("m1", "user", "My sister Sam plays jazz."), ("m2", "assistant", "Lovely!")]


def test_statements_leave_questions_and_conditions_out():
    assert [s for _, s in statements(shown_messages(LABELLED))] == ["I work as a nurse."]


def test_each_case_cites_what_it_says_it_cites():
    shown = shown_messages(LABELLED)
    built = {case.name: case.build(shown, "en", LABELLED) for case in CASES}
    evidence = {name: answer["new_facts"][0].get("evidence") for name, answer in built.items()}
    assert evidence["good_exact_quote"] == [{"message": "m1", "quote": "I work as a nurse."}]
    assert evidence["assistant_quote"][0]["message"] == "m2"
    assert evidence["assistant_quote_cited_as_user"][0]["message"] == "m1"
    assert evidence["user_question"][0]["quote"] == "Do you?"
    assert evidence["user_hypothetical"][0]["quote"].startswith("If I were")
    assert evidence["quote_from_prompt"][0]["quote"] == "Rules: quote the user's own words."
    assert "1987" in built["unsupported_name_and_number"]["new_facts"][0]["fact"]
    assert "evidence" not in built["old_shape_no_evidence"]["new_facts"][0]
    assert evidence["empty_evidence"] == []


def test_a_case_without_the_line_it_needs_builds_nothing():
    shown = shown_messages(PLAIN)
    built = {case.name: case.build(shown, "en", PLAIN) for case in CASES}
    assert built["user_question"] is None and built["user_hypothetical"] is None
    assert built["good_exact_quote"] is not None


def test_the_echo_answer_makes_every_message_a_fact():
    facts = echo_every_message(shown_messages(LABELLED))["new_facts"]
    assert [f["evidence"][0]["message"] for f in facts] == ["m1", "m2", "m3"]
    assert facts[1]["fact"] == "No: I am a model."
