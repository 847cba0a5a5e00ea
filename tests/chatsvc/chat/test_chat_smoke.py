from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import chat


def test_one_turn(client, alice, upstream):
    upstream.script(Reply(chunks=["Hel", "lo"]))
    events = chat(client, alice[1], "hi there")
    print(events)
    assert [e for e, _ in events] == ["meta", "delta", "delta", "done"]
