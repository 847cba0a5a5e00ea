"""Browser-test fixtures: the real service on a loopback port, Debian's chromium
driven by Playwright, console-error collection and screenshots under test-output/."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from chatsvc import Settings, create_app
from chatsvc.local_models import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SHOTS = Path(__file__).resolve().parents[3] / "test-output" / "console"


class LiveServer:
    """uvicorn serving `app` in a thread on a free loopback port."""

    def __init__(self, app) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning",
                                lifespan="on")
        self.url = f"http://127.0.0.1:{config.port}"
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the chatsvc test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def api(self, method: str, path: str, headers: dict, **kwargs) -> httpx.Response:
        response = httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)
        assert response.status_code < 300, (path, response.status_code, response.text)
        return response


@pytest.fixture
def settings(upstream_settings) -> Settings:
    return upstream_settings


@pytest.fixture
def live(services):
    """The service (real SQLite, the real local embedder) on a loopback port."""
    with LiveServer(create_app(services=services)) as server:
        yield server


# Package scope: Playwright's sync API keeps an event loop running in this thread, so
# it must be gone before tests elsewhere call asyncio.run().
@pytest.fixture(scope="package")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the console's browser tests need Debian's chromium. "
            "Run scripts/test.sh (it installs it when run as root) or "
            "`apt-get install -y chromium`.", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def console_errors():
    """Console errors and uncaught page errors; must be empty when the test ends."""
    errors: list[str] = []
    yield errors
    assert errors == [], f"browser console errors: {errors}"


@pytest.fixture
def page(browser, console_errors, request):
    if "live" in request.fixturenames:
        # Set up first, so torn down last: a page outliving its server logs the failed
        # requests of its timers (the index-status poll) as console errors.
        request.getfixturevalue("live")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    opened.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    opened.on("pageerror", lambda e: console_errors.append(f"uncaught: {e}"))
    yield opened
    SHOTS.mkdir(parents=True, exist_ok=True)
    opened.screenshot(path=str(SHOTS / f"{request.node.name}-final.png"), full_page=True)
    context.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in(page, live: LiveServer, headers: dict, tab: str = "") -> None:
    page.goto(f"{live.url}/#{tab}" if tab else live.url)
    page.get_by_label("Bearer token").fill(headers["Authorization"].split(" ", 1)[1])
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("tablist").wait_for()


# Elements of the visible panel that stick out past <main>'s content box, with how far.
# Stricter than the page's scroll width, which <main>'s padding hides a few px of: a grid
# column sized by a long line shows here whatever the timing of the content.
_STICKING_OUT = """() => {
  const main = document.querySelector('main');
  const limit = main.getBoundingClientRect().right
    - parseFloat(getComputedStyle(main).paddingRight);
  const scrolls = (el) => {
    for (let up = el.parentElement; up && up !== main; up = up.parentElement)
      if (getComputedStyle(up).overflowX !== 'visible') return true;
    return false;
  };
  return [...main.querySelectorAll('*')]
    .filter((el) => el.getClientRects().length && !scrolls(el))
    .map((el) => [el.id ? `#${el.id}` : `${el.tagName.toLowerCase()}.${el.className}`,
                  Math.round(el.getBoundingClientRect().right - limit)])
    .filter(([, past]) => past > 0);
}"""


def sticking_out(page) -> list:
    """[selector, px] for each visible element wider than the screen lets it be."""
    return page.evaluate(_STICKING_OUT)
