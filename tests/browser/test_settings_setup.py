"""The first run in Chromium, from an EMPTY database (migrated, no seed_demo): the web process's log
gives the setup code, a wrong code is refused, the form makes the owner, the snippet is shown, and the
owner reaches the console and the settings; then the owner adds a canned response in the Replies area
and finds it in the list. Clean under axe-core at desktop and phone widths, usable with the keyboard."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import SERVER_ENV
from tests.browser.owner_pages import WAIT
from tests.live import ROOT, manage, start_web

pytestmark = pytest.mark.browser

CODE_LINE = re.compile(r"/setup/\?code=([0-9a-f]{32})")
PASSWORD = "First-Run-Browser-76"
EMAIL = "owner@example.org"
DOCS_IMG = ROOT / "docs" / "img" / "owners"


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory):
    """The Procfile's web on a migrated database holding no account (what a fresh install starts
    with; `make run` would seed its demo widget, and /setup/ would be 404)."""
    where = tmp_path_factory.mktemp("empty-server")
    var_dir = where / "var"
    var_dir.mkdir()
    manage(var_dir, "migrate", "--noinput")
    server = start_web(var_dir, {}, where / "web.log", **SERVER_ENV)
    try:
        yield server
    finally:
        server.terminate()


def clean_under_axe(page) -> None:
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


WIDER_THAN_VIEWPORT = """() => [...document.querySelectorAll('body *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
  .map((e) => e.tagName + '.' + e.className + '#' + e.id).slice(0, 10)"""


def fits_the_width(page) -> None:
    """Nothing sticks out sideways (a phone would scroll the whole page)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], (width, page.evaluate(WIDER_THAN_VIEWPORT))


def save_for_the_guide(path: Path, name: str) -> None:
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, DOCS_IMG / name)


def test_the_first_run_from_an_empty_database(browser, empty_server, shot):
    # given the code the web process printed at its start
    empty_server.wait_for_output("/setup/?code=", timeout=30)
    code = CODE_LINE.search(empty_server.output()).group(1)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        # a wrong code is refused
        wrong = page.goto(empty_server.url("/setup/?code=" + "0" * 32))
        assert wrong.status == 404
        assert page.goto(empty_server.url("/setup/")).status == 404

        # the right one shows the form; the keyboard walks it in order
        assert page.goto(empty_server.url(f"/setup/?code={code}")).status == 200
        expect(page.get_by_role("heading", name="Welcome", level=1)).to_be_visible(timeout=WAIT)
        clean_under_axe(page)
        page.get_by_label("Your name").focus()
        page.keyboard.type("Olivia")
        page.keyboard.press("Tab")
        expect(page.get_by_label("Your e-mail")).to_be_focused()
        page.keyboard.type(EMAIL)
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Password again").fill(PASSWORD)
        page.get_by_label("Widget name").fill("Olivia's shop")
        save_for_the_guide(shot(page, "form"), "setup.png")
        page.get_by_label("Widget name").press("Enter")

        # the snippet, with its copy button, and the ways on
        expect(page.get_by_role("heading", name="Your widget is ready")).to_be_visible(timeout=WAIT)
        snippet = page.locator("#snippet").input_value()
        guid = re.search(r"loader\.js\?guid=([0-9a-f]+)", snippet).group(1)
        expect(page.get_by_role("button", name="Copy")).to_be_visible()
        clean_under_axe(page)
        shot(page, "done")

        # the page is closed now, whatever the code
        closed = context.new_page()
        assert closed.goto(empty_server.url(f"/setup/?code={code}")).status == 404
        closed.close()

        # the demo page shows the new widget
        demo = context.new_page()
        assert demo.goto(empty_server.url(f"/demo/?guid={guid}")).status == 200
        expect(demo.locator(f'script[src*="guid={guid}"]')).to_have_count(1)
        demo.close()

        # the owner is signed in: the console, then the settings
        page.get_by_role("link", name="The console, where chats are answered").click()
        expect(page).to_have_url(empty_server.url("/console/"), timeout=WAIT)
        page.get_by_role("link", name="Settings", exact=True).first.click()
        expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible(timeout=WAIT)
        assert f"guid={guid}" in page.locator("#snippet").input_value()
    finally:
        context.close()

    # and signs in again with the password chosen on the first-run page
    again = browser.new_context(locale="en-US")
    try:
        page = again.new_page()
        page.goto(empty_server.url("/console/login/"))
        page.get_by_label("E-mail").fill(EMAIL)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(empty_server.url("/console/"), timeout=WAIT)
    finally:
        again.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_owner_adds_a_reply_and_finds_it(browser, empty_server, shot, width):
    # the first-run test made the owner (the module's tests share one server)
    context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
    try:
        page = context.new_page()
        page.goto(empty_server.url("/console/login/"))
        page.get_by_label("E-mail").fill(EMAIL)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(empty_server.url("/console/"), timeout=WAIT)
        page.goto(empty_server.url("/console/settings/replies/"))
        expect(page.get_by_role("heading", name="Replies", level=1)).to_be_visible(timeout=WAIT)

        shortcut = f"refund{width}"
        page.get_by_label("Shortcut", exact=True).fill(shortcut)
        page.get_by_label("Title", exact=True).fill("Refund policy")
        page.get_by_label("Text", exact=True).fill(
            "Hello {{contact.name|there}}, your money comes back within 14 days."
        )
        page.get_by_role("button", name="Add the reply").click()
        expect(page.locator(".flash")).to_contain_text(f"Reply /{shortcut} created.", timeout=WAIT)

        page.get_by_label("Search", exact=True).fill("money")
        page.get_by_label("Search", exact=True).press("Enter")
        expect(page.locator("#replies")).to_contain_text(f"/{shortcut}", timeout=WAIT)
        clean_under_axe(page)

        # a taken shortcut is refused with the API's words
        page.get_by_label("Shortcut", exact=True).fill(shortcut)
        page.get_by_label("Title", exact=True).fill("Again")
        page.get_by_label("Text", exact=True).fill("Again")
        page.get_by_role("button", name="Add the reply").click()
        expect(page.locator(".refusal")).to_contain_text("is already used by another canned response", timeout=WAIT)
        clean_under_axe(page)

        page.goto(empty_server.url("/console/settings/replies/"))
        fits_the_width(page)
        path = shot(page)
        if width == 1280:
            save_for_the_guide(path, "replies.png")
    finally:
        context.close()
