import pytest

from store import ChunkIn
from store.backend import stores_for
from store.fts import first_hit, index_text, match_query, query_terms

NASTY = [
    '"', '""', '"unbalanced', 'AND', 'OR', 'NOT', 'a AND', 'AND OR NOT', 'NEAR(', 'NEAR(a b',
    'NEAR(a b, 2)', '*', 'foo*', '^start', 'title:x', ':', 'col:', '(', ')', '()', '-', '+',
    'a - b', "'", '\\', '{a b}', 'body : "x" AND NEAR(y z) OR w*', '\x00', '搜索"AND', '。！？',
    '', '   ', 'x' * 5000, ' '.join(['term'] * 500),
]


def test_query_builder_quotes_terms_and_splits_cjk_into_bigrams():
    assert query_terms('Hybrid "search" AND NEAR(x') == ["hybrid", "search", "near", "x"]
    assert query_terms("how do I reset the password") == ["reset", "password"]
    assert query_terms("what is it") == ["what", "is", "it"]  # only stopwords: keep them
    assert query_terms("怎么重置") == ["么重", "重置"]
    assert query_terms("向量数据库 BM25") == ["向量", "量数", "数据", "据库", "bm25"]
    assert query_terms("库") == ["库"]
    assert match_query("x:y") == '"x" OR "y"'
    assert match_query('"*:') is None
    assert index_text("用向量检索") == " 用向 向量 量检 检索 "


@pytest.fixture
def knowledge(db, users):
    store = stores_for(db).knowledge
    owner, _ = users.add("alice")
    store.save(owner_id=None, title="Search", content="c", source_type="document",
               chunks=[ChunkIn("BM25 AND NEAR ranking for title: search *", "en"),
                       ChunkIn("混合检索使用向量和关键词", "zh")])
    return store, owner


@pytest.mark.parametrize("query", NASTY)
def test_fts_syntax_in_queries_never_raises(knowledge, query):
    store, owner = knowledge
    hits = store.keyword(query, viewer_id=owner.id)
    assert isinstance(hits, list)


def test_syntax_words_are_matched_as_plain_text(knowledge):
    store, owner = knowledge
    assert [h.chunk_index for h in store.keyword("NEAR(", viewer_id=owner.id)] == [0]
    assert [h.chunk_index for h in store.keyword('"向量"', viewer_id=owner.id)] == [1]
    assert store.keyword("nothing matches this", viewer_id=owner.id) == []


def test_first_hit_points_at_the_first_query_term():
    assert first_hit("alpha beta gamma", "Gamma beta") == 6
    assert first_hit("alpha", "zzz") == 0
