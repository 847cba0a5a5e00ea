"""Facts.find_live: exact-text lookup among the user's live facts."""

from store.clock import now_iso


def test_find_live_matches_exact_text_of_live_facts_only(services, alice, bob):
    facts = services.stores.facts
    ann, ben = alice[0].id, bob[0].id
    old = facts.create(ann, category="core", fact="Lives in Rome")
    assert facts.find_live(ann, " Lives in Rome ").id == old.id
    assert facts.find_live(ann, "lives in rome") is None
    assert facts.find_live(ben, "Lives in Rome") is None
    new = facts.create(ann, category="core", fact="Lives in Oslo")
    facts.supersede(old.id, by_id=new.id, at=now_iso())
    assert facts.find_live(ann, "Lives in Rome") is None
    assert facts.find_live(ann, "Lives in Oslo").id == new.id
