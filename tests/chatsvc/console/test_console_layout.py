"""The console on a phone-sized screen: every tab fits without sideways scrolling."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.chatsvc.console.conftest import shot, sign_in, sticking_out

TABS = ["Chat", "Facts", "Fact sheet", "Memory", "Knowledge", "Usage"]


def test_every_tab_fits_a_narrow_screen(page, live, alice):
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, live, alice[1])
    for name in TABS:
        page.get_by_role("tab", name=name).click()
        panel = page.get_by_role("tabpanel")
        expect(panel).to_have_count(1)
        expect(panel).to_have_attribute("aria-labelledby", page.get_by_role(
            "tab", name=name).get_attribute("id"))
        page.wait_for_load_state("networkidle")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} tab is {overflow}px wider than the screen"
        assert sticking_out(page) == [], f"{name} tab"
        shot(page, f"narrow-{name.lower().replace(' ', '-')}")


def test_every_form_control_has_a_label(page, live, alice):
    sign_in(page, live, alice[1])
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea')]
        .filter((el) => el.type !== 'hidden' && el.labels.length === 0
                        && !el.getAttribute('aria-label'))
        .map((el) => el.id || el.outerHTML)""")
    assert unlabelled == []
