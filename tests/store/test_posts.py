import pytest

from store import NotFound, Posts


@pytest.fixture
def posts(db):
    return Posts(db)


def _make(posts, title, published=True):
    return posts.create(author_id=None, title=title, content=f"{title} body", excerpt=f"{title}.",
                        published=published)


def test_crud_and_publish_stamp(posts):
    draft = _make(posts, "Draft", published=False)
    assert draft.published_at is None
    with pytest.raises(NotFound):
        posts.get(draft.id, include_drafts=False)
    published = posts.update(draft.id, published=True, title="Live")
    assert (published.title, published.published) == ("Live", True)
    assert published.published_at is not None
    assert posts.get(draft.id, include_drafts=False).id == draft.id
    with pytest.raises(ValueError):
        posts.update(draft.id, author_id="x")
    posts.delete(draft.id)
    with pytest.raises(NotFound):
        posts.get(draft.id)
    with pytest.raises(NotFound):
        posts.update(draft.id, title="gone")


def test_recent_published_returns_newest_published_only(posts):
    for title in ["one", "two", "three", "four"]:
        _make(posts, title)
    _make(posts, "hidden", published=False)
    recent = posts.recent_published(3)
    assert [p.title for p in recent] == ["four", "three", "two"]
    assert [p.excerpt for p in recent] == ["four.", "three.", "two."]
    assert {p.title for p in posts.list(limit=10)} == {"one", "two", "three", "four"}
    assert len(posts.list(limit=10, include_drafts=True)) == 5
