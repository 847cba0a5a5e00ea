from context.tiers import parse_tiers, tier_messages
from context.tokens import count_tokens


def test_tier_prompt_is_bounded():
    messages = tier_messages("Big", "word " * 20_000, max_input_tokens=500)
    assert messages[0]["role"] == "system" and "JSON" in messages[0]["content"]
    assert count_tokens(messages[1]["content"]) <= 510


def test_parse_tiers_accepts_json_and_rejects_junk():
    reply = 'Sure! {"abstract": "About search.", "overview": ["BM25", "vectors"]} done'
    assert parse_tiers(reply) == ("About search.", "- BM25\n- vectors")
    assert parse_tiers('{"abstract": "A.", "overview": "one point"}') == ("A.", "- one point")
    for junk in ["no json here", "{not json}", '{"overview": []}', '["a"]',
                 '{"abstract": "", "overview": []}', '{"abstract": "A", "overview": 3}']:
        assert parse_tiers(junk) is None, junk
