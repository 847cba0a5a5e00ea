from context.tiers import extractive_tiers, parse_tiers, tier_messages
from context.tokens import count_tokens

DOC = """# Setup

Install the package. Then run the server. It listens on port 8000. Logs go to stderr.

## Search

Hybrid search merges BM25 and vectors. RRF does the merge.

## Limits

Chunks are capped at 800 characters.
"""


def test_extractive_tiers_use_first_sentences_and_headings():
    abstract, overview = extractive_tiers("Guide", DOC)
    assert abstract == "Install the package. Then run the server. It listens on port 8000."
    assert overview.splitlines() == [
        "- Setup: Install the package.",
        "- Search: Hybrid search merges BM25 and vectors.",
        "- Limits: Chunks are capped at 800 characters.",
    ]


def test_extractive_tiers_without_headings_and_in_chinese():
    abstract, overview = extractive_tiers("笔记", "第一句。第二句。第三句。第四句。\n\n另一段。")
    assert abstract == "第一句。第二句。第三句。"
    assert overview.splitlines() == ["- 第一句。", "- 另一段。"]
    assert extractive_tiers("Title only", "") == ("Title only", "")


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
