"""Reading the JSON object out of a model's answer."""

import pytest

from chatsvc.llm import MalformedReply, json_object


def test_the_object_is_read_from_fences_and_surrounding_words():
    assert json_object('Sure:\n```json\n{"a": [1]}\n```') == {"a": [1]}


def test_a_raw_line_break_inside_a_string_is_read_as_meant():
    # What grammar-constrained Gemma 270M writes: the test_local_llm run failed on it.
    assert json_object('{"fact": "Works as a nurse\nin Lyon"}') == {
        "fact": "Works as a nurse\nin Lyon"}


@pytest.mark.parametrize("text", ["no json", '["a list"]', '{"a": }', ""])
def test_what_is_not_an_object_is_malformed(text):
    with pytest.raises(MalformedReply):
        json_object(text)
