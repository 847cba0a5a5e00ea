"""What a long message is embedded as: its key with the text cut to its first passage."""

from store.recall import PASSAGE_TOKENS, KeyedMessage, embedded_key, index_key, passage_head


def test_a_short_text_is_its_own_first_passage():
    text = "I finally booked the flights to Lisbon for May."
    assert passage_head(text) == text
    message = KeyedMessage("user", "Ana", text, "2023-05-08T13:56:00Z",
                           "assistant", None, "Where to?")
    assert embedded_key("context", message) == index_key("context", message)


def test_english_is_cut_after_a_whole_word_near_the_token_budget():
    text = " ".join(f"word{n}" for n in range(400))  # 6-7 characters a word
    head = passage_head(text, 128)
    assert text.startswith(head) and not head.endswith(" ")
    assert text[len(head)] == " "  # cut between words, not inside one
    assert 400 < len(head) <= 128 * 4  # about four characters a token


def test_chinese_text_gets_about_a_character_and_a_third_a_token():
    text = "我姐姐在杭州的一家咖啡店上班，每周六下午读书会三点开始。" * 20
    head = passage_head(text, 64)
    assert text.startswith(head)
    assert 80 <= len(head) <= 90  # 64 / 0.75 characters, no spaces to cut at


def test_a_long_message_keeps_its_date_speaker_and_previous_turn_before_the_passage():
    answer = "Start with the Yamanote line. " * 100
    message = KeyedMessage("assistant", None, answer, "2023-05-20T02:21:00Z",
                           "user", None, "How do I get around Tokyo?")
    key = embedded_key("context", message)
    assert key.startswith("20 May 2023\nUser: How do I get around Tokyo?\nAssistant: Start")
    assert len(key) < len(index_key("context", message)) / 4
    assert key.endswith(passage_head(answer, PASSAGE_TOKENS))
