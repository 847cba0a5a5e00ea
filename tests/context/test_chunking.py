import itertools
import random
import re

import pytest

from context.chunking import chunk_text, guess_language, overlap_tail, split_sentences
from context.tokens import count_tokens

WORDS = ["vector", "search", "index", "chunk", "overlap", "sentence", "paragraph", "query",
         "model", "cache", "token"]


def _english(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18))).capitalize() + "."
        for _ in range(sentences)
    )


def _chinese(rng: random.Random, sentences: int) -> str:
    chars = "向量检索分块重叠句子段落查询模型缓存令牌中文数据库"
    ends = "。！？；"
    return "".join(
        "".join(rng.choice(chars) for _ in range(rng.randint(8, 40))) + rng.choice(ends)
        for _ in range(sentences)
    )


def _document(seed: int) -> str:
    rng = random.Random(seed)
    paragraphs = [
        (_chinese if rng.random() < 0.4 else _english)(rng, rng.randint(1, 30))
        for _ in range(rng.randint(1, 12))
    ]
    return "\n\n".join(paragraphs)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("max_chars", [200, 800])
def test_chunks_respect_the_cap_and_overlap(seed, max_chars):
    text = _document(seed)
    chunks = chunk_text(text, max_chars=max_chars, overlap_chars=50)
    assert chunks, "a non-empty document gives chunks"
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert 0 < len(chunk.text) <= max_chars
        assert count_tokens(chunk.text) <= 300 + count_tokens(chunk.text[:60]) + 2
    for before, after in itertools.pairwise(chunks):
        tail = overlap_tail(before.text, 50)
        assert tail and len(tail) <= 50
        assert after.text.startswith(tail), "each chunk starts with the previous chunk's tail"


@pytest.mark.parametrize("seed", range(10))
def test_sentences_are_never_cut_when_they_fit(seed):
    text = _document(seed)
    chunks = chunk_text(text, max_chars=300, overlap_chars=40)
    joined = [re.sub(r"\s+", " ", c.text) for c in chunks]
    for paragraph in text.split("\n\n"):
        for sentence in split_sentences(paragraph):
            assert any(sentence in c for c in joined), sentence[:40]


def test_cjk_punctuation_ends_sentences():
    text = "第一句话。第二句话！第三句话？第四句话；第五句"
    expected = ["第一句话。", "第二句话！", "第三句话？", "第四句话；", "第五句"]
    assert split_sentences(text) == expected


def test_long_chinese_paragraph_splits_at_cjk_sentence_ends():
    sentence = "向量检索把文本变成数字以便比较相似度。"  # 19 chars
    text = sentence * 40
    chunks = chunk_text(text, max_chars=120, overlap_chars=20)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 120
        assert chunk.text.endswith("。"), "cuts fall after a CJK full stop"
        assert chunk.language == "zh"


def test_one_overlong_sentence_is_the_only_mid_sentence_cut():
    text = "word " * 400  # 2000 chars, no sentence end at all
    chunks = chunk_text(text.strip(), max_chars=300, overlap_chars=30)
    assert all(len(c.text) <= 300 for c in chunks)
    assert "".join(c.text for c in chunks).count("word") >= 400


def test_small_paragraphs_are_packed_together():
    text = "\n\n".join(f"Paragraph {i} is short." for i in range(5))
    chunks = chunk_text(text)
    assert len(chunks) == 1
    assert chunks[0].text.count("\n\n") == 4


def test_blank_text_gives_no_chunks_and_bad_sizes_raise():
    assert chunk_text("  \n\n  ") == []
    with pytest.raises(ValueError):
        chunk_text("x", max_chars=80, overlap_chars=50)


@pytest.mark.parametrize(("text", "language"), [
    ("Hybrid search merges rankings.", "en"),
    ("混合检索合并两个排序。", "zh"),
    ("ベクトル検索を使う", "ja"),
    ("벡터 검색", "ko"),
    ("12345 ---", "und"),
    ("用 RRF 合并 BM25 和向量检索的结果", "zh"),
])
def test_language_guess(text, language):
    assert guess_language(text) == language
