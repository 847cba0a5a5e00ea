"""GET /api/conversations/search with questions of several parts and questions that name a
time (`asked_at`): each part's evidence reaches the top, and the messages of the time
named come first without the others being dropped."""

import asyncio
from datetime import timedelta

import pytest

from chatsvc.tools._catalog import Caller, search_conversations
from store.clock import utc_now
from store.contract import VectorState, VectorStatus
from store.recall import names_in, without_names
from tests.chatsvc.recall.test_search_api import _search
from tests.chatsvc.test_warmup import wait_warm

# Many turns about the book club, one about the sister's work: asked together, the book
# club's words would fill the top on their own.
BOOK_CLUB = [f"The book club meets on {day}; this month we read {title}."
             for day, title in (("Monday", "Dune"), ("Tuesday", "Emma"), ("Friday", "Ulysses"),
                                ("Sunday", "Beloved"), ("Thursday", "Middlemarch"))]
PARTS = {"conversations": [
    {"title": "Club", "messages": [
        *({"role": "user", "content": text, "created_at": f"2023-05-0{n + 1}T10:00:00Z"}
          for n, text in enumerate(BOOK_CLUB)),
        {"role": "user", "content": "读书会每周四晚上七点开始，地点在图书馆。",
         "created_at": "2023-05-07T10:00:00Z"},
        {"role": "user", "content": "读书会这个月读《红楼梦》，大家都很喜欢读书会。",
         "created_at": "2023-05-07T11:00:00Z"},
        {"role": "user", "content": "读书会的成员越来越多了，读书会很热闹。",
         "created_at": "2023-05-07T12:00:00Z"}]},
    {"title": "Family", "messages": [
        {"role": "user", "content": "My sister is a nurse at the children's hospital.",
         "created_at": "2023-05-08T10:00:00Z"},
        {"role": "user", "content": "我姐姐在一家银行上班。",
         "created_at": "2023-05-08T11:00:00Z"}]},
]}
# The same dinner twice, a month apart: only the time the question names tells them apart.
DINNERS = {"conversations": [
    {"title": "March", "messages": [
        {"role": "user", "content": "We had dinner at the Sichuan restaurant with Li.",
         "created_at": "2023-03-15T12:00:00Z"}]},
    {"title": "May", "messages": [
        {"role": "user", "content": "We had dinner at the Sichuan restaurant with Wang.",
         "created_at": "2023-05-15T12:00:00Z"}]},
]}



def recent_dinners() -> dict:
    """DINNERS dated from now: with Li four months ago, with Wang last month."""
    def dinner(months_ago: int, friend: str) -> dict:
        day = (utc_now().replace(day=15) - timedelta(days=30 * months_ago)).replace(day=15)
        return {"title": friend, "messages": [{
            "role": "user", "content": f"We had dinner at the Sichuan restaurant with {friend}.",
            "created_at": day.strftime("%Y-%m-%dT12:00:00Z")}]}
    return {"conversations": [dinner(4, "Li"), dinner(1, "Wang")]}

def _import(client, headers, body, index_now) -> list[str]:
    response = client.post("/api/conversations/import", headers=headers, json=body)
    assert response.status_code == 202, response.text
    index_now()
    return [i for c in response.json()["conversations"] for i in c["message_ids"]]


def _contents(body: dict) -> list[str]:
    return [hit["content"] for hit in body["results"]]


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
@pytest.mark.parametrize(("question", "evidence"), [
    ("When does the book club meet? Also, where does my sister work?",
     "My sister is a nurse at the children's hospital."),
    ("读书会是几点开始？另外，我姐姐在哪里上班？", "我姐姐在一家银行上班。"),
])
def test_each_part_of_a_two_part_question_reaches_the_top(
        client, alice, index_now, mode, question, evidence):
    _import(client, alice[1], PARTS, index_now)
    body = _search(client, alice[1], q=question, mode=mode, limit=3)
    assert evidence in _contents(body)[:2]
    assert any("book club" in text or "读书会" in text for text in _contents(body)[:2])
    assert all(0 < hit["score"] <= 1 for hit in body["results"])
    assert len(body["results"]) == 3


def test_a_two_part_question_never_finds_another_users_messages(client, alice, bob, index_now):
    _import(client, alice[1], PARTS, index_now)
    _import(client, bob[1], DINNERS, index_now)
    body = _search(client, bob[1], q="When does the book club meet? Also, where does my "
                   "sister work?", limit=10)
    assert set(_contents(body)) <= {m["content"] for c in DINNERS["conversations"]
                                    for m in c["messages"]}


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
@pytest.mark.parametrize(("question", "asked_at", "first"), [
    ("Where did we have dinner with friends last month?", "2023-04-18T09:00:00Z", "Li."),
    ("Where did we have dinner with friends last month?", "2023-06-18T09:00:00Z", "Wang."),
    ("Where did we have dinner with friends in May?", "2023-06-18", "Wang."),
    ("上个月我们和谁一起吃了晚饭 dinner Sichuan restaurant？", "2023-04-18T09:00:00Z", "Li."),
])
def test_the_messages_of_the_time_named_come_first_and_the_others_stay(
        client, alice, index_now, mode, question, asked_at, first):
    _import(client, alice[1], DINNERS, index_now)
    body = _search(client, alice[1], q=question, mode=mode, asked_at=asked_at)
    found = _contents(body)
    assert found[0].endswith(first)
    assert len(found) == 2  # a preference, not a filter


def test_the_time_named_is_read_in_the_users_timezone(client, services, alice, index_now):
    # 16:30 UTC on 30 April is already 1 May in Shanghai: "last month" is April there,
    # whose window (April and as long again) holds the May dinner; in UTC it is March.
    _user, token = services.stores.users.add("carol", timezone="Asia/Shanghai")
    carol = {"Authorization": f"Bearer {token}"}
    question = {"q": "Where did we have dinner with friends last month?",
                "asked_at": "2023-04-30T16:30:00Z"}
    for headers, first in ((carol, "Wang."), (alice[1], "Li.")):
        _import(client, headers, DINNERS, index_now)
        assert _contents(_search(client, headers, **question))[0].endswith(first)


@pytest.mark.parametrize("asked_at", ["yesterday", "2023-13-01", "x" * 100])
def test_an_unreadable_asked_at_is_400_naming_it(client, alice, asked_at):
    response = client.get("/api/conversations/search", headers=alice[1],
                          params={"q": "dinner last month", "asked_at": asked_at})
    assert response.status_code == 400, response.text
    assert response.json()["extra"][0]["key"] == "asked_at"


@pytest.mark.parametrize("asked_at", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_an_asked_at_at_the_calendars_ends_is_answered_in_any_zone(
        client, services, index_now, asked_at):
    for n, zone in enumerate(("Pacific/Kiritimati", "Pacific/Pago_Pago")):
        _user, token = services.stores.users.add(f"edge{n}", timezone=zone)
        headers = {"Authorization": f"Bearer {token}"}
        _import(client, headers, DINNERS, index_now)
        body = _search(client, headers, q="What did we eat this year and last year?",
                       asked_at=asked_at)
        assert len(body["results"]) == 2


def test_the_search_tool_reads_the_time_named_from_now(client, services, alice, index_now):
    # The chat model's and MCP's search_conversations asks at the present moment: of the
    # same dinner last month and four months ago, last month's comes first.
    _import(client, alice[1], recent_dinners(), index_now)
    caller = Caller(services, alice[0])
    found = asyncio.run(search_conversations(
        caller, "Where did we have dinner with friends last month?"))
    assert [hit["content"][-4:] for hit in found["results"]] == ["ang.", " Li."]


# Two speakers of imported group chats who said the same, each after a note of their own.
CAMPING = {"conversations": [{"title": f"{name}'s trip", "messages": [
    {"role": "user", "name": name, "content": "The weather was mild.",
     "created_at": f"2023-05-0{n + 1}T10:00:00Z"},
    {"role": "user", "name": name, "content": "We went camping by the lake.",
     "created_at": f"2023-05-0{n + 1}T10:01:00Z"}]} for n, name in enumerate(("Ana", "Ben"))]}


@pytest.mark.parametrize(("question", "first"), [
    ("Where has Ana camped?", "Ana"), ("Where has ben camped?", "Ben"),
    ("Where did Ben's family go camping?", "Ben")])
def test_the_turns_of_the_speaker_a_question_names_rank_higher(
        client, services, alice, index_now, question, first):
    ids = _import(client, alice[1], CAMPING, index_now)
    camped = {"Ana": ids[1], "Ben": ids[3]}
    other = camped["Ben" if first == "Ana" else "Ana"]
    # The other speaker's turn a little ahead, as a near tie of the rankings leaves it.
    ranking = [(other, 0.8), (camped[first], 0.75), (ids[0], 0.3)]
    raised = services.stores.messages._preferred(ranking, question, None)
    assert [message_id for message_id, _ in raised[:2]] == [camped[first], other]
    assert services.stores.messages._preferred(ranking, "Where has anyone camped?",
                                               None) == ranking


def test_a_name_is_a_word_of_its_own_or_any_part_of_an_unspaced_script():
    names = {"Ana", "Anabel", "小明", "민수", "José"}
    assert names_in("What did Ana's sister say?", names) == {"Ana"}
    assert names_in("Anabel and ANA went out", names) == {"Ana", "Anabel"}
    assert names_in("Banana bread", names) == set()
    assert names_in("小明上周去了哪里？", names) == {"小明"}
    assert names_in("민수가 어디 갔어?", names) == {"민수"}
    assert names_in("What did josé cook?", names) == {"José"}


def test_the_text_embedded_leaves_the_speakers_names_out():
    names = {"Ana", "Anabel", "小明", "Melanie"}
    assert without_names("What does Melanie's daughter like?", names) == (
        "What does daughter like?")
    assert without_names("Did Ana and Anabel both go?", names) == "Did and both go?"
    assert without_names("小明上周去了哪里？", names) == "上周去了哪里？"
    assert without_names("Banana bread", names) == "Banana bread"
    assert without_names("Melanie?", names) == "Melanie?"  # nothing else would be left


@pytest.fixture
def embedded(client, services, monkeypatch) -> list[str]:
    """The texts conversation search embeds, in order (after the start-up warm-up's)."""
    wait_warm(client)
    asked = []
    embed_query = services.recall.embedder.embed_query

    async def recording(text: str):
        asked.append(text)
        return await embed_query(text)

    monkeypatch.setattr(services.recall.embedder, "embed_query", recording)
    return asked


def test_a_conversation_search_embeds_the_question_without_speakers_names(
        client, services, alice, bob, index_now, embedded):
    _import(client, alice[1], CAMPING, index_now)
    _import(client, bob[1], {"conversations": [{"title": "Zoe", "messages": [
        {"role": "user", "name": "Zoe", "content": "Zoe went camping too."}]}]}, index_now)
    assert services.stores.messages.speakers(alice[0].id) == ["Ana", "Ben"]
    body = _search(client, alice[1], q="Where has Zoe or Ana camped?", mode="semantic")
    # Ana is one of alice's speakers, Zoe only bob's: only Ana's name is left out.
    assert embedded == ["Where has Zoe or camped?"]
    assert body["results"][0]["content"] == "We went camping by the lake."
    # The keyword half and the speaker's raise still read the whole question.
    body = _search(client, alice[1], q="Where has Ana camped?", mode="hybrid")
    assert embedded[-1] == "Where has camped?"
    assert body["results"][0]["name"] == "Ana"


def test_each_part_of_a_question_is_embedded_without_speakers_names(
        client, alice, index_now, embedded):
    _import(client, alice[1], CAMPING, index_now)
    _search(client, alice[1], q="Where has Ana camped? Also, how was Ben's weather?",
            mode="semantic")
    assert embedded == ["Where has camped?", "how was weather?"]


def test_a_search_with_the_vector_store_down_reads_no_speakers(
        client, services, alice, index_now, monkeypatch):
    _import(client, alice[1], CAMPING, index_now)
    read = []
    speakers = services.recall.index.speakers
    monkeypatch.setattr(services.recall.index, "speakers",
                        lambda user_id: read.append(user_id) or speakers(user_id))
    _search(client, alice[1], q="Where has Ana camped?", mode="hybrid")
    assert read == [alice[0].id]
    db = services.recall.index.db
    monkeypatch.setattr(db, "vector_state", VectorState(VectorStatus.UNAVAILABLE, "gone"))
    body = _search(client, alice[1], q="Where has Ana camped?", mode="hybrid")
    assert (body["mode"], body["degraded_reason"]) == (
        "keyword", "vector store unavailable: gone")
    assert body["results"][0]["name"] == "Ana"  # the speaker's raise still works
    assert read == [alice[0].id]  # nothing embedded, no names to leave out
